"""Real documents of every type a RAG accepts, built in memory (a PDF by hand, a DOCX with python-docx)."""

from __future__ import annotations

import io
import zipfile
import zlib


def pdf(*pages: str, deflate: bool = False) -> bytes:
    """A valid PDF whose pages show `pages` in Helvetica; an empty string gives a page with no text (image-only).
    With `deflate`, the page content streams are FlateDecode-compressed."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    font_ref = 3
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for text in pages:
        lines = [line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in text.split("\n")]
        ops = ["BT /F1 12 Tf 72 720 Td 14 TL"] + [f"({line}) Tj T*" for line in lines if text] + ["ET"]
        stream = "\n".join(ops).encode("latin-1")
        flate = b""
        if deflate:
            stream, flate = zlib.compress(stream, 9), b" /Filter /FlateDecode"
        objects.append(b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(stream), flate, stream))
        content_ref = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (content_ref, font_ref)
        )
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    return pdf_file(objects)


def pdf_file(objects: list[bytes]) -> bytes:
    """A PDF of these objects (numbered from 1, the first the catalog), with its cross-reference table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def docx(paragraphs: list[str], table: list[list[str]] | None = None) -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx_with(replaced: dict[str, bytes], *, stored: frozenset[str] = frozenset()) -> bytes:
    """A valid DOCX (one paragraph) with some members replaced or added; members named in `stored` are not deflated."""
    original = zipfile.ZipFile(io.BytesIO(docx(["A harmless paragraph."])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in dict.fromkeys([*original.namelist(), *replaced]):
            data = replaced[name] if name in replaced else original.read(name)
            archive.writestr(name, data, zipfile.ZIP_STORED if name in stored else zipfile.ZIP_DEFLATED)
    return out.getvalue()


def document_xml(body: str) -> bytes:
    """word/document.xml around `body` (WordprocessingML inside <w:body>)."""
    return (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        f"<w:body>{body}</w:body></w:document>"
    ).encode()
