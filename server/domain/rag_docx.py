"""DOCX text, read defensively: a DOCX is a zip of XML parts, so its upload size says little about the work it costs
(a 155 KB file held 40 MiB of XML, which python-docx's lxml tree turned into a 1.15 GiB peak).

Before python-docx sees the file:
- The archive's declared sizes are checked. They bound the real work: zipfile never inflates a member past its
  declared size (it stops there, and the CRC check then fails), so a zip bomb is refused without inflating anything.
  All members together may hold at most `max_bytes` (the upload limit: a compressed file unpacks to no more than the
  largest uncompressed upload), the XML parts at most `MAX_XML_BYTES` (an lxml tree takes about 30 times its text),
  and no member past `RATIO_FLOOR` may inflate more than `MAX_RATIO`:1 (text XML deflates 5-20:1; bombs 1000:1).
- Every XML part (`.xml`, `.rels`) is streamed once through expat, with constant memory: a DTD (entity declarations,
  the billion-laughs family) is refused, as is nesting deeper than `MAX_DEPTH` (libxml2 stops at 256 with an opaque
  error) and malformed XML; each refusal names the part.
- A member flagged encrypted (zipfile would ask for a password: RuntimeError) is refused as a corrupt DOCX, as is a
  member whose deflate stream does not inflate (zlib.error), whether we or python-docx read it.
python-docx then parses with lxml (resolve_entities=False, no network, no huge trees), the safety net for a part
named otherwise that it parses anyway (its content type decides); what lxml refuses is reported as a corrupt DOCX.
So is well-formed XML that is not the part python-docx expects (`[Content_Types].xml` = `<Types/>`, a relationship
without a target, a document without a body): python-docx then fails with AttributeError or TypeError from deep in
its own code, not with an error of its own, and any failure is caught only when raised inside python-docx
(server.domain.library_failures), so that a bug of ours in this module still surfaces as one.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from pyexpat import ExpatError, ParserCreate, errors
from typing import IO, TYPE_CHECKING

from server.domain.library_failures import raised_in
from server.errors import InvalidArgument

if TYPE_CHECKING:
    from docx.table import Table

    from server.domain.rag_parsing import NamedFile  # which imports this module

__all__ = ["MAX_DEPTH", "MAX_RATIO", "MAX_XML_BYTES", "RATIO_FLOOR", "docx_text"]

MAX_XML_BYTES = 32 * 1024 * 1024
MAX_RATIO = 100
RATIO_FLOOR = 1024 * 1024  # smaller members may compress better: a few KB of repeated styles is harmless
MAX_DEPTH = 128
_READ = 1 << 16
_SNIFF = 512
_XML_PARTS = (".xml", ".rels")
_ENCRYPTED = 0x1  # a zip member's general-purpose flag: Word never encrypts members so (it encrypts a whole file)


class _Refused(Exception):
    """Raised from an expat handler to stop the parse; carries what to tell the client about the file."""


def docx_text(file: NamedFile, data: bytes, *, max_bytes: int) -> str:
    """The document's paragraphs, then its table rows (cells joined by ` | `), one per line."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            _check_sizes(file, archive, max_bytes)
            for member in archive.infolist():
                if member.filename.endswith(_XML_PARTS):
                    with archive.open(member) as stream:
                        _check_xml(file, member.filename, stream)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError, ValueError, zlib.error):
        raise _corrupt(file) from None  # zlib.error: a member's deflate stream is corrupt
    return _extract(file, data)


def _corrupt(file: NamedFile) -> InvalidArgument:
    return file.invalid("not a readable DOCX file (corrupt or of another type)")


def _check_sizes(file: NamedFile, archive: zipfile.ZipFile, max_bytes: int) -> None:
    members = archive.infolist()
    total = sum(m.file_size for m in members)
    if total > max_bytes:
        raise file.too_large(f"the DOCX unpacks to {total} bytes, over the limit of {max_bytes}")
    for member in members:
        if member.flag_bits & _ENCRYPTED:  # zipfile would raise RuntimeError ("password required") on reading it
            raise _corrupt(file)
        if member.file_size > RATIO_FLOOR and member.file_size > MAX_RATIO * max(member.compress_size, 1):
            ratio = member.file_size // max(member.compress_size, 1)
            raise file.invalid(f"{member.filename} inflates {ratio}:1, more than {MAX_RATIO}:1 (a zip bomb?)")
    xml = sum(m.file_size for m in members if _is_xml(archive, m))
    if xml > MAX_XML_BYTES:
        raise file.too_large(f"the DOCX holds {xml} bytes of XML, over the limit of {MAX_XML_BYTES}")


def _is_xml(archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> bool:
    """Named as an XML part, or reading like XML (a part's content type, not its name, decides whether python-docx
    parses it): its first bytes, after any byte-order mark and blanks, open a tag."""
    if member.filename.endswith(_XML_PARTS):
        return True
    with archive.open(member) as stream:
        return stream.read(_SNIFF).lstrip(b"\xef\xbb\xbf\xff\xfe\x00 \t\r\n").startswith(b"<")


def _check_xml(file: NamedFile, part: str, stream: IO[bytes]) -> None:
    """Stream one XML part through expat (media such as SVG images is not checked: python-docx never parses it)."""
    parser = ParserCreate()
    depth = 0

    def start(_name: str, _attributes: object) -> None:
        nonlocal depth
        depth += 1
        if depth > MAX_DEPTH:
            raise _Refused(f"{part} nests XML elements deeper than {MAX_DEPTH} levels")

    def end(_name: str) -> None:
        nonlocal depth
        depth -= 1

    def doctype(*_: object) -> None:
        raise _Refused(f"{part} has a DTD (document type declaration), which a DOCX never needs")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = doctype
    try:
        while chunk := stream.read(_READ):
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except _Refused as refused:
        raise file.invalid(str(refused)) from None
    except ExpatError as exc:
        reason = errors.messages[exc.code] if exc.code is not None else "not well-formed"
        raise file.invalid(f"{part} is not well-formed XML ({reason}, line {exc.lineno})") from None


def _extract(file: NamedFile, data: bytes) -> str:
    import docx

    try:
        document = docx.Document(io.BytesIO(data))
        blocks = [paragraph.text for paragraph in document.paragraphs]
        for table in document.tables:
            blocks += _rows(table)
    except Exception as exc:  # zlib.error: a member only python-docx reads (an image) is corrupt
        if not raised_in(exc, "docx"):
            raise
        raise _corrupt(file) from None
    return "\n".join(blocks)


def _rows(table: Table) -> list[str]:
    """Each row's cells as `a | b | c`, a vertically merged cell's text on every row it spans. python-docx's
    `_Row.cells` finds a merged cell's text by recursing to the row above, once per row, at a cost growing with the
    cube of the rows (300 merged rows took 3 s; 1,000 ran out of stack): here each row's cells read the text the
    rows above left under their grid column."""
    from docx.oxml.simpletypes import ST_Merge
    from docx.table import _Cell

    above: dict[int, str] = {}  # grid column -> the text of the cell a vertical merge there continues
    rows = []
    for row in table.rows:
        column, texts = row.grid_cols_before, []
        for tc in row._tr.tc_lst:  # the row's own cells, as python-docx's `cells` reads them
            if tc.vMerge == ST_Merge.CONTINUE:
                text = above.get(column, "")
            else:
                text = above[column] = _Cell(tc, table).text.strip()
            texts.append(text)
            column += tc.grid_span
        rows.append(" | ".join(texts))
    return rows
