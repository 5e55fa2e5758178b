"""Parsing every accepted file type into blocks, the CSV rule (spec 3.3.0), and each refusal naming the file."""

from __future__ import annotations

import io
import json
import re
import struct
import zipfile

import pytest

from server.domain.rag_parsing import parse_file
from server.errors import InvalidArgument, PayloadTooLarge
from tests.rag_documents import document_xml, docx, docx_with, pdf, pdf_file

LIMIT = 1 << 20


def test_pdf_pages_become_blocks() -> None:
    parsed = parse_file(
        "report.pdf", "application/pdf", pdf("Quarterly revenue (EUR)\nrose 4%", "Outlook: stable"), max_bytes=LIMIT
    )
    assert parsed.kind == "pdf"
    assert parsed.blocks == ["Quarterly revenue (EUR)\nrose 4%", "Outlook: stable"]
    assert not parsed.records


def test_html_keeps_content_and_drops_scripts_navigation_and_styles() -> None:
    page = b"""<html><head><title>t</title><style>p{color:red}</style></head><body>
    <nav>Home | About</nav><header>Site header</header>
    <main><h1>Heat pumps</h1><p>A heat pump moves heat &amp; saves energy.</p></main>
    <script>var secret = 1;</script><footer>Copyright</footer></body></html>"""
    parsed = parse_file("page.html", None, page, max_bytes=LIMIT)
    assert parsed.blocks == ["Heat pumps\nA heat pump moves heat & saves energy."]


@pytest.mark.parametrize(("name", "kind"), [("notes.md", "markdown"), ("notes.txt", "text")])
def test_markdown_and_text_are_indexed_as_written(name: str, kind: str) -> None:
    body = "# Title\r\n\r\n\r\n\r\nSome *text* here.\n"
    parsed = parse_file(name, None, body.encode(), max_bytes=LIMIT)
    assert parsed.kind == kind
    assert parsed.blocks == ["# Title\n\nSome *text* here."]


def test_text_with_a_byte_order_mark_and_utf16() -> None:
    assert parse_file("a.txt", None, "\ufeffHallo Welt".encode(), max_bytes=LIMIT).blocks == ["Hallo Welt"]
    assert parse_file("a.txt", None, "Grüße".encode("utf-16"), max_bytes=LIMIT).blocks == ["Grüße"]


def test_docx_paragraphs_and_tables() -> None:
    data = docx(["Travel policy", "Economy class for flights under 6 hours."], [["Grade", "Class"], ["E5", "Business"]])
    parsed = parse_file("policy.docx", None, data, max_bytes=LIMIT)
    assert parsed.blocks == ["Travel policy\nEconomy class for flights under 6 hours.\nGrade | Class\nE5 | Business"]


def _cell(text: str, merge: str | None = None, span: int = 1) -> str:
    merged = "" if merge is None else f'<w:vMerge w:val="{merge}"/>' if merge else "<w:vMerge/>"
    spanned = f'<w:gridSpan w:val="{span}"/>' if span > 1 else ""
    paragraph = f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" if text else "<w:p/>"
    return f"<w:tc><w:tcPr>{spanned}{merged}</w:tcPr>{paragraph}</w:tc>"


def _table(rows: list[list[str]], columns: int) -> bytes:
    grid = "<w:gridCol/>" * columns
    body = "".join(f"<w:tr>{''.join(row)}</w:tr>" for row in rows)
    return docx_with(
        {"word/document.xml": document_xml(f"<w:tbl><w:tblPr/><w:tblGrid>{grid}</w:tblGrid>{body}</w:tbl>")}
    )


def test_a_docx_merged_cell_s_text_is_on_each_row_it_spans() -> None:
    rows = [
        [_cell("Region", "restart"), _cell("Q1", span=2)],
        [_cell("", ""), _cell("10"), _cell("12")],
        [_cell("North"), _cell("7", "restart"), _cell("9")],
        [_cell("South"), _cell("", ""), _cell("4")],
    ]
    parsed = parse_file("sales.docx", None, _table(rows, 3), max_bytes=LIMIT)
    assert parsed.blocks == ["Region | Q1\nRegion | 10 | 12\nNorth | 7 | 9\nSouth | 7 | 4"]


def test_a_docx_column_merged_over_thousands_of_rows_parses() -> None:
    """python-docx's `_Row.cells` recursed to the row above once per merged row: its cost grew with the cube of
    the rows (300 rows, 3 s) and a column merged over ~1,000 rows ran out of stack, a 500 (found by probing)."""
    rows = [[_cell("Region", "restart")], *([_cell("", "")] for _ in range(2_999))]
    parsed = parse_file("sales.docx", None, _table(rows, 1), max_bytes=LIMIT)
    assert parsed.blocks == ["\n".join(["Region"] * 3_000)]


def test_json_object_becomes_path_value_lines() -> None:
    body = json.dumps({"title": "Pump", "specs": {"power_kw": 7.5, "tags": ["a", "b"]}, "empty": None})
    parsed = parse_file("item.json", None, body.encode(), max_bytes=LIMIT)
    assert parsed.blocks == ["title: Pump\nspecs.power_kw: 7.5\nspecs.tags[0]: a\nspecs.tags[1]: b"]
    assert not parsed.records


def test_json_array_gives_one_labelled_block_per_element() -> None:
    body = json.dumps([{"name": "Ada", "role": "engineer"}, {"name": "Linus"}])
    parsed = parse_file("people.json", None, body.encode(), max_bytes=LIMIT)
    assert parsed.blocks == ["name: Ada\nrole: engineer", "name: Linus"]
    assert parsed.records


def test_csv_is_one_labelled_block_per_row() -> None:
    body = 'city,country,population\nBerlin,Germany,"3,600,000"\nLyon,,522000\n,,\n'
    parsed = parse_file("cities.csv", "text/csv", body.encode(), max_bytes=LIMIT)
    assert parsed.records
    assert parsed.blocks == [
        "city: Berlin\ncountry: Germany\npopulation: 3,600,000",
        "city: Lyon\npopulation: 522000",  # empty cells are left out; an all-empty row is no block at all
    ]


def test_csv_with_semicolons_and_extra_cells() -> None:
    body = "sku;price\nA-1;9.99;clearance\n"
    parsed = parse_file("prices.csv", None, body.encode(), max_bytes=LIMIT)
    assert parsed.blocks == ["sku: A-1\nprice: 9.99\ncolumn 3: clearance"]


def test_media_type_is_the_fallback_when_the_name_has_no_known_extension() -> None:
    assert parse_file("upload", "text/csv; charset=utf-8", b"a,b\n1,2\n", max_bytes=LIMIT).kind == "csv"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("scan.pdf", pdf("")),  # image-only: no extractable text
        ("blank.txt", b"  \n\n \t"),
        ("header-only.csv", b"a,b,c\n"),
        ("empty.json", b"{}"),
        ("nothing.html", b"<html><body><script>x()</script></body></html>"),
        ("blank.docx", docx([""])),
    ],
)
def test_content_that_parses_to_nothing_is_refused_naming_the_file(name: str, data: bytes) -> None:
    with pytest.raises(InvalidArgument) as refused:
        parse_file(name, None, data, max_bytes=LIMIT)
    assert refused.value.message.startswith(f"{name}: ")
    assert "empty content" in refused.value.message
    assert refused.value.field == "file"


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("broken.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog", "not a readable PDF"),
        ("fake.pdf", b"hello, I am text", "not a readable PDF"),
        ("broken.docx", b"PK\x03\x04garbage", "not a readable DOCX"),
        ("broken.json", b'{"a": ', "not a readable JSON"),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, "the JSON nests deeper than 200 levels"),
        ("image.png", b"\x89PNG\r\n\x1a\n", "unsupported file type"),
        ("binary.txt", b"ab\x00cd", "binary content"),
        ("latin1.txt", "café".encode("latin-1"), "not valid UTF-8"),
    ],
)
def test_corrupt_or_wrong_files_are_refused_naming_the_file(name: str, data: bytes, says: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        parse_file(name, None, data, max_bytes=LIMIT)
    assert refused.value.message.startswith(f"{name}: ")
    assert says in refused.value.message


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("fake.pdf", b"hello, I am text"),
        ("broken.docx", b"PK\x03\x04garbage"),
        ("evil.docx", docx_with({"_rels/.rels": b'<?xml version="1.0"?><!DOCTYPE r><Relationships/>'})),
        ("deep.json", b"[" * 1_000 + b"]" * 1_000),
        ("image.png", b"\x89PNG\r\n\x1a\n"),
        ("latin1.txt", "café".encode("latin-1")),
        ("blank.txt", b"  \n\n \t"),
        ("big.txt", b"x" * (LIMIT + 1)),
    ],
)
def test_a_refusal_names_the_field_it_is_given(name: str, data: bytes) -> None:
    """Where the request holds the file (`files[2]` of a JSON batch, a scraper's `body.text`): every parser names it
    itself, as it names the file in the message."""
    with pytest.raises((InvalidArgument, PayloadTooLarge)) as refused:
        parse_file(name, None, data, max_bytes=LIMIT, field="files[2]")
    assert refused.value.field == "files[2]" and refused.value.message.startswith(f"{name}: ")


def test_a_file_over_the_size_limit_is_refused_before_parsing() -> None:
    with pytest.raises(PayloadTooLarge) as refused:
        parse_file("big.txt", None, b"x" * 101, max_bytes=100)
    assert refused.value.message == "big.txt: file is 101 bytes, over the limit of 100"


_PARA = "<w:p><w:r><w:t>All work and no play makes a dull report.</w:t></w:r></w:p>"


def test_a_docx_zip_bomb_is_refused_from_its_declared_sizes() -> None:
    bomb = docx_with({"word/document.xml": document_xml(_PARA * 700_000)})  # 40 MiB of XML in a few hundred KB
    assert len(bomb) < 400_000
    with pytest.raises(PayloadTooLarge) as refused:
        parse_file("bomb.docx", None, bomb, max_bytes=16 * 1024 * 1024)
    assert refused.value.message.startswith("bomb.docx: the DOCX unpacks to ")
    assert refused.value.field == "file"


def test_a_docx_member_inflating_past_the_ratio_is_refused() -> None:
    bomb = docx_with({"word/document.xml": document_xml(_PARA * 40_000)})  # 2.3 MiB, far past 100:1
    with pytest.raises(InvalidArgument) as refused:
        parse_file("ratio.docx", None, bomb, max_bytes=64 * 1024 * 1024)
    assert "word/document.xml inflates" in refused.value.message and "more than 100:1" in refused.value.message


@pytest.mark.parametrize("part", ["word/document.xml", "word/renamed.dat"])
def test_a_docx_with_too_much_xml_is_refused(part: str) -> None:
    """XML is known by its name or, since a part's content type decides what python-docx parses, by its content."""
    big = docx_with({part: document_xml(_PARA * 600_000)}, stored=frozenset({part}))
    with pytest.raises(PayloadTooLarge) as refused:
        parse_file("big.docx", None, big, max_bytes=64 * 1024 * 1024)
    assert "bytes of XML, over the limit of 33554432" in refused.value.message


def test_media_is_not_parsed_so_an_svg_may_carry_a_doctype() -> None:
    svg = b'<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x.dtd"><svg/>'
    parsed = parse_file("pic.docx", None, docx_with({"word/media/image1.svg": svg}), max_bytes=LIMIT)
    assert parsed.blocks == ["A harmless paragraph."]


@pytest.mark.parametrize(
    ("xml", "says"),
    [
        (
            b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>'
            + document_xml("<w:p><w:r><w:t>&b;</w:t></w:r></w:p>").split(b"?>", 1)[1],
            "word/document.xml has a DTD",
        ),
        (document_xml("<p>" * 100_000 + "</p>" * 100_000), "word/document.xml nests XML elements deeper than 128"),
        (document_xml("<w:p><w:r></w:p>"), "word/document.xml is not well-formed XML (mismatched tag, line 2)"),
        (b"<w:document", "word/document.xml is not well-formed XML"),
    ],
)
def test_docx_xml_with_a_dtd_deep_nesting_or_malformed_is_refused_naming_the_part(xml: bytes, says: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        parse_file("evil.docx", None, docx_with({"word/document.xml": xml}), max_bytes=4 * LIMIT)
    assert refused.value.message.startswith("evil.docx: " + says), refused.value.message
    assert refused.value.field == "file"


def test_a_dtd_in_any_xml_part_is_refused() -> None:
    rels = b'<?xml version="1.0"?><!DOCTYPE r SYSTEM "http://127.0.0.1:1/x.dtd"><Relationships/>'
    with pytest.raises(InvalidArgument) as refused:
        parse_file("evil.docx", None, docx_with({"_rels/.rels": rels}), max_bytes=LIMIT)
    assert refused.value.message.startswith("evil.docx: _rels/.rels has a DTD")


def test_compressed_pdf_text_past_the_limit_is_refused() -> None:
    page = "compressible " * 2_000  # 26,000 characters that deflate to a few hundred bytes
    small = pdf(page, page, deflate=True)
    assert len(small) < 5_000
    assert parse_file("ok.pdf", None, small, max_bytes=60_000).blocks == [page.strip()] * 2
    with pytest.raises(PayloadTooLarge) as refused:
        parse_file("long.pdf", None, small, max_bytes=30_000)
    assert refused.value.message == "long.pdf: the file holds more than 30000 characters of text"


def test_html_lists_scripts_and_comments_parse_to_their_text() -> None:
    """Unclosed paragraphs and list items, void elements, and tags inside scripts or comments."""
    page = "<ul>" + "<li><p>item<br><img src=x>" * 5_000 + "</ul>"
    page += "<script>" + "document.write('<div>');" * 2_000 + "</script><!-- " + "<div>" * 2_000 + " -->"
    page = "<html><body>" + "<div><section>" * 10 + page + "</section></div>" * 10 + "</body></html>"
    parsed = parse_file("long.html", None, page.encode(), max_bytes=LIMIT)
    assert parsed.blocks[0].startswith("item\nitem")
    unclosed = "<script>never closed <div>" + "<div>" * 2_000
    assert parse_file("s.html", None, f"<p>text</p>{unclosed}".encode(), max_bytes=LIMIT).blocks == ["text"]


def test_html_with_tags_in_comments_scripts_and_attributes_still_parses() -> None:
    """Markup inside real comments, scripts, styles and attribute values is not text, and `<!-->` ends its comment."""
    noise = (
        "<!-->"
        + "<style type='text/css'>p > a { color: red }</style>"
        + '<a title="<div><div>" href=x>link</a>'
        + "<script src='x.js'></script><script>if (i<n) { s = '<div>'; }</script>" * 1_500
        + "<!-- "
        + "<div>" * 1_500
        + " -->"
    )
    parsed = parse_file("ok.html", None, f"<html><body>{noise}<p>kept</p></body></html>".encode(), max_bytes=LIMIT)
    assert parsed.blocks == ["link\nkept"]


def _zip_flag_encrypted(data: bytes) -> bytes:
    """The archive with the 'encrypted' bit set on every central-directory entry (nothing else changed)."""
    out = bytearray(data)
    position = 0
    while (position := out.find(b"PK\x01\x02", position)) >= 0:
        flags = struct.unpack_from("<H", out, position + 8)[0]
        struct.pack_into("<H", out, position + 8, flags | 1)
        position += 4
    return bytes(out)


def _zip_corrupt_deflate(data: bytes, member: str) -> bytes:
    """The archive with the first compressed bytes of `member` overwritten (an invalid deflate stream)."""
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(member)
    out = bytearray(data)
    name_length, extra_length = struct.unpack_from("<HH", out, info.header_offset + 26)
    start = info.header_offset + 30 + name_length + extra_length
    size = min(info.compress_size, 40)
    out[start : start + size] = b"\xff" * size
    return bytes(out)


def _pdf_with_deep_content() -> bytes:
    """A valid one-page PDF whose content stream opens with an array nested 5,000 deep (its /Length and the xref
    offsets recomputed, so nothing else is wrong with it)."""
    good = pdf("Lighthouse keepers polish the lens.")
    match = re.search(rb"<< /Length (\d+) >>\nstream\n", good)
    assert match is not None
    start, length = match.end(), int(match.group(1))
    content = b"[" * 5000 + b"]" * 5000 + b"\n" + good[start : start + length]
    body = good[: match.start()] + b"<< /Length %d >>\nstream\n" % len(content) + content + good[start + length :]
    head = body.partition(b"xref\n")[0]
    offsets = [m.start() for m in re.finditer(rb"(?m)^\d+ 0 obj\n", head)]
    xref = b"xref\n0 %d\n0000000000 65535 f \n" % (len(offsets) + 1) + b"".join(
        b"%010d 00000 n \n" % o for o in offsets
    )
    trailer = b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(offsets) + 1, len(head))
    return head + xref + trailer


def _one_page_pdf(content: bytes, stream_dictionary: bytes = b"") -> bytes:
    return pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R "
            b"/Resources << /Font << /F1 3 0 R >> >> >>",
            b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(content), stream_dictionary, content),
        ]
    )


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        # zipfile raised RuntimeError ("password required") and zlib.error: 500s
        ("locked.docx", _zip_flag_encrypted(docx(["A perfectly ordinary paragraph."])), "not a readable DOCX"),
        (
            "mangled.docx",
            _zip_corrupt_deflate(docx(["A perfectly ordinary paragraph."]), "word/document.xml"),
            "not a readable DOCX",
        ),
        # pypdf's parser recursed into RecursionError: a 500
        ("deep.pdf", _pdf_with_deep_content(), "not a readable PDF"),
        # pypdf raised NotImplementedError for a filter it lacks, and AssertionError for a reference in a content
        # stream (found by probing: 500s, one with the filter's name from the file in the log)
        ("odd.pdf", _one_page_pdf(b"BT (Hello) Tj ET", b" /Filter /UnheardOfDecode"), "not a readable PDF"),
        ("ref.pdf", _one_page_pdf(b"BT /F1 12 Tf 72 720 Td 3 0 R Tj ET"), "not a readable PDF"),
        # json.loads raised a plain ValueError (Python's 4,300-digit limit), not JSONDecodeError: a 500
        ("big-number.json", b'{"n": ' + b"9" * 5000 + b"}", "more than 4300 digits"),
    ],
)
def test_files_that_broke_a_parser_are_refused_naming_the_file(name: str, data: bytes, says: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        parse_file(name, None, data, max_bytes=LIMIT)
    assert refused.value.message.startswith(f"{name}: ") and says in refused.value.message
    assert refused.value.field == "file"


def test_json_keeps_long_integers_exactly_and_escaped_surrogate_pairs() -> None:
    parsed = parse_file("ok.json", None, b'{"id": 123456789012345678901234567, "e": "\\ud83d\\ude00"}', max_bytes=LIMIT)
    assert parsed.blocks == ["id: 123456789012345678901234567\ne: \U0001f600"]


def _pdf_with_glyph_map(bfchars: bytes) -> bytes:
    """A valid one-page PDF that shows the codes <41 42 43> in Helvetica with a ToUnicode map of `bfchars`
    (`<code> <UTF-16BE>` pairs), the map a PDF carries to say which text its glyphs are."""
    cmap = (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Glyphs def "
        b"1 begincodespacerange <00> <FF> endcodespacerange\n%d beginbfchar %s endbfchar\n"
        b"endcmap CMapName currentdict /CMap defineresource pop end end" % (bfchars.count(b"<") // 2, bfchars)
    )
    content = b"BT /F1 12 Tf 72 720 Td <414243> Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(cmap), cmap),
    ]
    return pdf_file(objects)


@pytest.mark.parametrize(
    ("bfchars", "text"),
    [
        (b"<41> <0041> <42> <0042> <43> <0043>", "ABC"),
        (b"<41> <D800>", "\ufffdBC"),  # pypdf gave "\ud800BC": unencodable by the tokenizer and the drivers, a 500
        (b"<42> <DFFF>", "A\ufffdC"),
        (b"<41> <D83D> <42> <DE00>", "\U0001f600C"),  # two glyphs mapped to the halves of one character
    ],
)
def test_pdf_glyphs_mapped_to_surrogate_halves_keep_the_rest_of_the_text(bfchars: bytes, text: str) -> None:
    """A glyph mapped to no character costs that glyph (U+FFFD), not the document."""
    parsed = parse_file("glyphs.pdf", None, _pdf_with_glyph_map(bfchars), max_bytes=LIMIT)
    assert parsed.blocks == [text]
    assert parsed.blocks[0].encode()


def test_json_escaped_lone_surrogates_become_replacement_characters() -> None:
    """The same rule for every parser: a lone surrogate escape, in a value or a key, is U+FFFD; a pair is kept."""
    body = b'[{"title": "Lighthouse \\ud800 keepers", "\\udfff": "lens"}, {"e": "\\ud83d\\ude00"}]'
    parsed = parse_file("surrogate.json", None, body, max_bytes=LIMIT)
    assert parsed.blocks == ["title: Lighthouse \ufffd keepers\n\ufffd: lens", "e: \U0001f600"]
