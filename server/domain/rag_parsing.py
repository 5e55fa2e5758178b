"""Turn an uploaded file into text blocks for a RAG: PDF, HTML, Markdown, plain text, DOCX, JSON and CSV.

A parse yields `blocks`. For prose formats a block is a page or a paragraph run and the chunker may join and split
them freely; for CSV (spec 3.3.0) and for JSON arrays every record is one labelled block (`column: value` lines) that
the chunker never merges with its neighbours, so a retrieved chunk always carries its own row's labels.

Every refusal is a 4xx naming the file (`NamedFile`: its name in the message, where the request holds it in the
field): an unsupported or mislabelled type and a corrupt file are `InvalidArgument` (400), an oversized one
`PayloadTooLarge` (413), and a file with no extractable text (an image-only PDF, an empty sheet) `InvalidArgument` too,
as the spec's Errors table demands ("RAG upload that parses to empty content").
Compressed formats are bounded by what they unpack to, not by their size: no file may yield more characters of text
than the upload limit allows bytes (a PDF is stopped at the page that crosses it; pypdf caps each stream it
inflates), and a DOCX is checked before it is unpacked (server.domain.rag_docx). Every parser's blocks pass through
one cleanup (`_tidy`), which also turns what is not Unicode text (a lone UTF-16 surrogate from a PDF's glyph map or a
JSON escape) into U+FFFD.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from server.domain.library_failures import raised_in
from server.domain.rag_docx import docx_text
from server.domain.validation import is_utf8
from server.errors import InvalidArgument, PayloadTooLarge
from server.input_bounds import json_depth

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "SUPPORTED_KINDS",
    "NamedFile",
    "ParsedFile",
    "detect_kind",
    "out_of_memory",
    "parse_file",
]

_EXTENSIONS = {
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".docx": "docx",
    ".json": "json",
    ".csv": "csv",
}
_MEDIA_TYPES = {
    "application/pdf": "pdf",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/plain": "text",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/json": "json",
    "text/csv": "csv",
}
SUPPORTED_KINDS = frozenset(_EXTENSIONS.values())
SUPPORTED_EXTENSIONS = frozenset(_EXTENSIONS)
# Elements whose text is never document content.
_HTML_NOISE = ["script", "style", "noscript", "template", "svg", "nav", "header", "footer", "iframe", "head"]
_MAX_JSON_DEPTH = 200  # far deeper than real documents; far from Python's recursion limit
_BLANK_RUNS = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")


@dataclass(frozen=True)
class NamedFile:
    """An uploaded file as its refusals name it: by its name in the message, and in the field by where the request
    holds it (a multipart `file` part, `files[2]` of a JSON batch, a scraper's `body.text`)."""

    filename: str
    field: str = "file"

    def invalid(self, problem: str) -> InvalidArgument:
        return InvalidArgument(f"{self.filename}: {problem}", field=self.field)

    def too_large(self, problem: str) -> PayloadTooLarge:
        return PayloadTooLarge(f"{self.filename}: {problem}", field=self.field)


@dataclass(frozen=True)
class ParsedFile:
    kind: str
    blocks: list[str]
    # True when each block is a record (CSV row, JSON array element) that must stay a chunk of its own.
    records: bool = False


def detect_kind(file: NamedFile, content_type: str | None) -> str:
    """The parser to use: the file extension decides; the declared media type is the fallback."""
    suffix = PurePosixPath(file.filename).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in _MEDIA_TYPES:
        return _MEDIA_TYPES[media]
    raise file.invalid("unsupported file type; supported are " + ", ".join(sorted(_EXTENSIONS)))


def parse_file(
    filename: str,
    content_type: str | None,
    data: bytes,
    *,
    max_bytes: int,
    kind: str | None = None,
    field: str = "file",
) -> ParsedFile:
    """`kind` given: parse as that, whatever the name and content type say (text a scraper extracted itself).
    Refusals name `field`, where the request holds the file."""
    file = NamedFile(filename, field)
    if len(data) > max_bytes:
        raise file.too_large(f"file is {len(data)} bytes, over the limit of {max_bytes}")
    kind = kind or detect_kind(file, content_type)
    parsed = _PARSERS[kind](file, data, max_bytes)
    blocks = [block for block in (_tidy(b) for b in parsed.blocks) if block]
    if sum(len(b) for b in blocks) > max_bytes:
        raise _too_much_text(file, max_bytes)
    if not blocks:
        raise file.invalid("the file parses to empty content (no extractable text)")
    return ParsedFile(kind=kind, blocks=blocks, records=parsed.records)


def _tidy(text: str) -> str:
    # A PDF's text, a UTF-16 file's or a JSON document's strings can hold NUL, which PostgreSQL's text cannot (its
    # driver refused the chunk: a 500); it is nothing a reader or a search needs.
    text = text.replace("\x00", "")
    if not is_utf8(text):
        # Halves of UTF-16 surrogate pairs: a PDF's ToUnicode map or a JSON escape ("\ud800") can give them, and no
        # encoder takes one (the tokenizer, either database's driver: a 500). Two that pair up are the character they
        # encode; a lone one stands for a glyph or escape that maps to no character, which U+FFFD marks, as lexbor
        # does for `&#xD800;`, rather than losing the whole file to it.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


def _too_much_text(file: NamedFile, max_chars: int) -> PayloadTooLarge:
    return file.too_large(f"the file holds more than {max_chars} characters of text")


def out_of_memory(file: NamedFile) -> PayloadTooLarge:
    """A parse that needed more memory than the parser's process may have (server.sandbox caps it)."""
    return file.too_large("parsing the file needs more memory than a parser is given")


def _corrupt(file: NamedFile, kind: str) -> InvalidArgument:
    return file.invalid(f"not a readable {kind} file (corrupt or of another type)")


def _decode(file: NamedFile, data: bytes) -> str:
    """Text files must be UTF-8 (a BOM is accepted, as is UTF-16 with its BOM); NUL bytes mean a binary file."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise _corrupt(file, "UTF-16 text") from None
    if b"\x00" in data:
        raise file.invalid("binary content where text was expected")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise file.invalid("text is not valid UTF-8") from None


def _parse_text(file: NamedFile, data: bytes, max_chars: int) -> ParsedFile:
    # Markdown is indexed as written: its markup is short, and headings help lexical matching.
    return ParsedFile(kind="text", blocks=[_decode(file, data)])


def _parse_pdf(file: NamedFile, data: bytes, max_chars: int) -> ParsedFile:
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError

    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise _corrupt(file, "PDF")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise file.invalid("the PDF is password-protected")
        pages, size = [], 0
        for page in reader.pages:  # page by page, so a PDF of endless text stops at the limit
            pages.append(page.extract_text() or "")
            size += len(pages[-1])
            if size > max_chars:
                raise _too_much_text(file, max_chars)
    except (InvalidArgument, PayloadTooLarge):
        raise
    except LimitReachedError:
        raise file.too_large("a PDF stream inflates past the size limits") from None
    except Exception as exc:
        # pypdf fails on crafted files with whatever it trips on: RecursionError (it parses nested arrays and
        # dictionaries recursively: a page of a few thousand `[`, 10 KB), AssertionError (an object reference inside
        # a content stream), NotImplementedError (a filter it lacks), besides its own errors
        if not raised_in(exc, "pypdf"):
            raise
        raise _corrupt(file, "PDF") from None
    return ParsedFile(kind="pdf", blocks=pages)


def _parse_html(file: NamedFile, data: bytes, max_chars: int) -> ParsedFile:
    from selectolax.lexbor import LexborHTMLParser, SelectolaxError

    # lexbor's tree builder is quadratic in nesting depth and in misnested formatting elements (72 KiB of `<b>`s
    # reopened in every paragraph build a 2.8 GiB tree): the sandbox the gateway parses in (server.sandbox) bounds
    # its CPU time and memory, and lexbor reports an allocation that failed as a failed parse.
    try:
        tree = LexborHTMLParser(_decode(file, data))
    except SelectolaxError:
        raise out_of_memory(file) from None
    tree.strip_tags(_HTML_NOISE)
    root = tree.body or tree.root
    text = root.text(separator="\n", strip=True) if root is not None else ""
    return ParsedFile(kind="html", blocks=[text])


def _parse_docx(file: NamedFile, data: bytes, max_chars: int) -> ParsedFile:
    return ParsedFile(kind="docx", blocks=[docx_text(file, data, max_bytes=max_chars)])


def _parse_csv(file: NamedFile, data: bytes, max_chars: int) -> ParsedFile:
    """One labelled block per row (spec 3.3.0): `header: value` lines, empty cells left out."""
    text = _decode(file, data)
    # The header line decides the delimiter (csv.Sniffer guesses wrong when rows are ragged).
    header_line = text.split("\n", 1)[0]
    delimiter = max(",;\t|", key=header_line.count)
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error:
        raise _corrupt(file, "CSV") from None
    if not rows:
        return ParsedFile(kind="csv", blocks=[], records=True)
    header = [name.strip() or f"column {i + 1}" for i, name in enumerate(rows[0])]
    blocks = []
    for row in rows[1:]:
        lines = [f"{_label(header, i)}: {value.strip()}" for i, value in enumerate(row) if value.strip()]
        blocks.append("\n".join(lines))
    return ParsedFile(kind="csv", blocks=blocks, records=True)


def _label(header: list[str], index: int) -> str:
    return header[index] if index < len(header) else f"column {index + 1}"


def _parse_json(file: NamedFile, data: bytes, max_chars: int) -> ParsedFile:
    """`path: value` lines; a top-level array gives one labelled block per element, like CSV rows."""
    text = _decode(file, data)
    if json_depth(text.encode()) > _MAX_JSON_DEPTH:  # json.loads and _json_lines recurse: a deep array was a 500
        raise file.invalid(f"the JSON nests deeper than {_MAX_JSON_DEPTH} levels")
    # Python's json rather than orjson: it reads an integer of any length exactly (orjson turns one past 64 bits into
    # a float), up to the interpreter's digit limit, which it refuses with a plain ValueError.
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise _corrupt(file, "JSON") from None
    except ValueError:
        raise file.invalid(f"the JSON holds an integer of more than {sys.get_int_max_str_digits()} digits") from None
    if isinstance(value, list):
        return ParsedFile(kind="json", blocks=["\n".join(_json_lines(item, "")) for item in value], records=True)
    return ParsedFile(kind="json", blocks=["\n".join(_json_lines(value, ""))])


def _json_lines(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _json_lines(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _json_lines(item, f"{path}[{index}]")
    elif value is not None and str(value).strip():
        text = value if isinstance(value, str) else json.dumps(value)
        yield f"{path}: {text}" if path else text


_PARSERS: dict[str, Callable[[NamedFile, bytes, int], ParsedFile]] = {
    "pdf": _parse_pdf,
    "html": _parse_html,
    "markdown": _parse_text,
    "text": _parse_text,
    "docx": _parse_docx,
    "json": _parse_json,
    "csv": _parse_csv,
}
