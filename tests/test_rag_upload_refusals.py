"""Hostile uploads through the real gateway answer a 4xx naming the problem, store nothing and charge nothing:
malformed multipart (a NUL in a filename, a header line without a colon, a line over 64 KiB, a control character
in an RFC 5987 name or filename, a name or filename that is not UTF-8, a Content-Disposition that does not parse, a
text field in an unknown charset or transfer encoding, more parts than the form takes, a nested multipart part) on
the RAG /files upload and on /v1/audio/transcriptions, DOCX zip bombs, DTDs, deep nesting, malformed XML and
packages python-docx cannot follow, and HTML whose parse would take minutes. What a file is charged is the text it
stores, not the size of its upload. The client's header text never reaches the gateway's log."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import orjson
import pytest

from tests.conftest import ONE_BACKEND, Server
from tests.gateway_fixtures import Gateway
from tests.gateway_world import GatewayWorld
from tests.rag_documents import document_xml, docx, docx_with
from tests.rag_http import call, multipart
from tests.rawhttp import RawResponse, raw_request
from tests.test_rag_http import RagWorld, _used, rw, url

__all__ = ["rw"]

# Refused as the upload is read and parsed, before anything is written: storage and quotas are tested on both
# databases (test_rag_http, test_rag_quotas).
pytestmark = ONE_BACKEND

BOUNDARY = b"sbBoundary7"
_PARA = "<w:p><w:r><w:t>All work and no play makes a dull report.</w:t></w:r></w:p>"
_RELS_WITHOUT_TARGET = (
    b'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    b'<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"/>'
    b"</Relationships>"
)


def _form(part_headers: list[bytes], content: bytes = b"Some text about lighthouses.") -> bytes:
    """One multipart/form-data body: a `file` part with these header lines, then the closing boundary."""
    return (
        b"--" + BOUNDARY + b"\r\n" + b"\r\n".join(part_headers) + b"\r\n\r\n" + content + b"\r\n"
        b"--" + BOUNDARY + b"--\r\n"
    )


DISPOSITION = b'Content-Disposition: form-data; name="file"; filename="a.txt"'
MALFORMED = [
    pytest.param([b'Content-Disposition: form-data; name="file"; filename="a\x00b.txt"'], "NUL", id="nul-in-filename"),
    pytest.param([DISPOSITION, b"this line has no colon"], "has no colon", id="line-without-colon"),
    pytest.param([DISPOSITION, b"X-Long: " + b"a" * 70_000], "longer than 8190 bytes", id="header-line-over-64k"),
]
# What only the RAG checks: the file name a part declares, once decoded, must fit its column and be printable.
BAD_NAMES = [
    pytest.param(
        [b"Content-Disposition: form-data; name=\"file\"; filename*=UTF-8''a%00b.txt"], "control character", id="nul"
    ),
    pytest.param(
        [b'Content-Disposition: form-data; name="file"; filename="' + b"n" * 600 + b'.txt"'],
        "longer than 512 characters",
        id="long-name",
    ),
]


# RFC 5987 names percent-decode to anything: a control character passed the header parser, then failed the
# transcription's upstream form (aiohttp refuses it in a header it writes) as a 500.
CONTROL_NAMES = [
    pytest.param(b"name=\"file\"; filename*=UTF-8''a%0D%0AX.wav", id="crlf-in-filename"),
    pytest.param(b"name=\"file\"; filename*=UTF-8''a%00b.wav", id="nul-in-filename"),
    pytest.param(b"name*=UTF-8''pr%0D%0Aompt", id="crlf-in-name"),
]
FILE_PART = [DISPOSITION]


def _file_part(filename: str) -> list[bytes]:
    return [f'Content-Disposition: form-data; name="file"; filename="{filename}"'.encode()]


def _parts(*parts: tuple[list[bytes], bytes]) -> bytes:
    """A multipart/form-data body of these parts (header lines, content)."""
    body = b"".join(
        b"--" + BOUNDARY + b"\r\n" + b"\r\n".join(headers) + b"\r\n\r\n" + content + b"\r\n"
        for headers, content in parts
    )
    return body + b"--" + BOUNDARY + b"--\r\n"


def _control_parts(params: bytes) -> list[tuple[list[bytes], bytes]]:
    """A part with these Content-Disposition params, and a `file` part too when it names another field."""
    bad = ([b"Content-Disposition: form-data; " + params], b"RIFF....WAVE")
    return [bad] if b'name="file"' in params else [bad, (FILE_PART, b"RIFF....WAVE")]


async def _post_form(base: str, path: str, key: str, body: bytes) -> RawResponse:
    headers = [
        (b"Authorization", f"Bearer {key}".encode()),
        (b"Content-Type", b"multipart/form-data; boundary=" + BOUNDARY),
    ]
    return await raw_request(base, "POST", path, headers, body)


def _refusal(answer: RawResponse, status: int = 400) -> dict[str, Any]:
    assert answer.status == status, answer.body[:300]
    assert answer.headers.get("content-type", "").startswith("application/json"), answer.headers
    error: dict[str, Any] = orjson.loads(answer.body)["error"]
    assert error["type"] == "invalid_request_error"
    assert "Traceback" not in error["message"] and "correlation id" not in error["message"]
    return error


async def _nothing_stored(rw: RagWorld, server: Server, rag: dict[str, Any]) -> None:
    listed = await call("GET", url(rw, rag, "/files"), rw.keys["editor"], params={"include_total": "true"})
    assert listed.body["total"] == 0
    assert await _used(rw, server, rag) == 0


@pytest.mark.parametrize(("part_headers", "says"), MALFORMED + BAD_NAMES)
async def test_malformed_multipart_on_rag_files_is_400(
    rw: RagWorld, server: Server, part_headers: list[bytes], says: str
) -> None:
    rag = await rw.rag()
    answer = await _post_form(rw.gateway, f"/rag/{rag['id']}/files", rw.keys["editor"], _form(part_headers))
    error = _refusal(answer)
    assert says in error["message"] and error["param"] == "file", error
    await _nothing_stored(rw, server, rag)


async def test_a_content_line_over_64k_is_data_not_a_refusal(rw: RagWorld) -> None:
    """Long lines inside a part's content are data (here an ignored part's): only header lines are bounded."""
    rag = await rw.rag()
    ignored = b'Content-Disposition: form-data; name="comment"\r\n\r\n' + b"x" * 200_000 + b"\r\n"
    body = b"--" + BOUNDARY + b"\r\n" + ignored + _form([DISPOSITION])
    answer = await _post_form(rw.gateway, f"/rag/{rag['id']}/files", rw.keys["editor"], body)
    assert answer.status == 201, answer.body[:300]


@pytest.mark.parametrize(("part_headers", "says"), MALFORMED)
async def test_malformed_multipart_on_transcriptions_is_400(
    gateway: Gateway, gw_world: GatewayWorld, part_headers: list[bytes], says: str
) -> None:
    model = f'Content-Disposition: form-data; name="model"\r\n\r\n{gw_world.model("whisper")}'.encode()
    body = b"--" + BOUNDARY + b"\r\n" + model + b"\r\n" + _form(part_headers)
    base = gateway.base_url.removesuffix("/v1")
    answer = await _post_form(base, "/v1/audio/transcriptions", gw_world.keys["all"], body)
    error = _refusal(answer)
    assert says in error["message"] and error["param"] == "file", error


# Raw bytes that are not UTF-8 (a Latin-1 name from an old client): aiohttp keeps them as lone surrogates, and
# rebuilding the transcription form for the upstream raised UnicodeEncodeError, a 500.
NON_UTF8_NAMES = [
    pytest.param(b'name="file"; filename="sp\xffeech.wav"', id="filename"),
    pytest.param(b'name="lang\xff"', id="field-name"),
]
# Names the header parser lets through, each with what its refusal says; a file name's control characters are
# BAD_NAMES on the RAG route.
DECODED_NAMES = [
    pytest.param(*name.values, says, id=name.id)
    for names, says in ((CONTROL_NAMES, "control character"), (NON_UTF8_NAMES, "not UTF-8"))
    for name in names
]


@pytest.mark.parametrize(("params", "says"), DECODED_NAMES[2:])
async def test_a_decoded_name_that_is_no_header_text_is_400_on_rag_files(
    rw: RagWorld, server: Server, params: Any, says: str
) -> None:
    rag = await rw.rag()
    answer = await _post_form(rw.gateway, f"/rag/{rag['id']}/files", rw.keys["editor"], _parts(*_control_parts(params)))
    error = _refusal(answer)
    assert says in error["message"] and error["param"] == "file", error
    await _nothing_stored(rw, server, rag)


@pytest.mark.parametrize(("params", "says"), DECODED_NAMES)
async def test_a_decoded_name_that_is_no_header_text_is_400_on_transcriptions(
    gateway: Gateway, gw_world: GatewayWorld, params: Any, says: str
) -> None:
    model = ([b'Content-Disposition: form-data; name="model"'], gw_world.model("whisper").encode())
    body = _parts(model, *_control_parts(params))
    answer = await _post_form(
        gateway.base_url.removesuffix("/v1"), "/v1/audio/transcriptions", gw_world.keys["all"], body
    )
    error = _refusal(answer)
    assert says in error["message"] and error["param"] == "file", error


# aiohttp's multipart reader costs more per part the more parts there are: a 5 MB form of these held a gateway
# worker's event loop until its supervisor killed it (every other request on it died too).
TINY_PARTS = _parts(*[([b'Content-Disposition: form-data; name="a"'], b"")] * 100_000)


async def _refused_at_once(base: str, path: str, key: str) -> None:
    answer = await asyncio.wait_for(_post_form(base, path, key, TINY_PARTS), 60)
    error = _refusal(answer)
    assert "more than" in error["message"] and "parts" in error["message"] and error["param"] == "file", error


async def test_a_form_of_many_tiny_parts_is_refused_at_once_on_rag_files(rw: RagWorld, server: Server) -> None:
    rag = await rw.rag()
    await _refused_at_once(rw.gateway, f"/rag/{rag['id']}/files", rw.keys["editor"])
    await _nothing_stored(rw, server, rag)


async def test_a_form_of_many_tiny_parts_is_refused_at_once_on_transcriptions(
    gateway: Gateway, gw_world: GatewayWorld
) -> None:
    await _refused_at_once(gateway.base_url.removesuffix("/v1"), "/v1/audio/transcriptions", gw_world.keys["all"])


async def test_an_upload_whose_files_fit_one_by_one_but_not_together_is_413(rw: RagWorld, server: Server) -> None:
    """Each file was bounded (64 MiB) but not the form: 100 of them held 6.4 GiB in a gateway worker. A form carries
    at most what a JSON upload may, twice one file's limit, text fields included."""
    rag = await rw.rag()
    each = 43 * 1024 * 1024  # under the file limit; three are over 128 MiB
    files = [(_file_part(f"part{i}.txt"), b"lighthouse " * (each // 11)) for i in range(3)]
    answer = await _post_form(rw.gateway, f"/rag/{rag['id']}/files", rw.keys["editor"], _parts(*files))
    error = _refusal(answer, 413)
    assert error["message"] == f"the upload is over the limit of {128 * 1024 * 1024} bytes for one request", error
    await _nothing_stored(rw, server, rag)
    metadata = ([b'Content-Disposition: form-data; name="metadata"'], b" " * (129 * 1024 * 1024) + b"{}")
    answer = await _post_form(rw.gateway, f"/rag/{rag['id']}/files", rw.keys["editor"], _parts(metadata))
    assert "for one request" in _refusal(answer, 413)["message"]
    one = [(FILE_PART, b"x" * (64 * 1024 * 1024 + 1))]
    answer = await _post_form(rw.gateway, f"/rag/{rag['id']}/files", rw.keys["editor"], _parts(*one))
    assert _refusal(answer, 413)["message"] == f"a.txt: file is over the limit of {64 * 1024 * 1024} bytes"
    await _nothing_stored(rw, server, rag)


async def test_the_bound_on_parts_leaves_room_for_every_form_that_means_it(
    rw: RagWorld, gateway: Gateway, gw_world: GatewayWorld
) -> None:
    """One file over the RAG's batch is still refused by that rule, by name; a transcription with every field it may
    repeat is answered."""
    rag = await rw.rag()
    files = [(FILE_PART, b"Some text about lighthouses.")] * 101
    answer = await _post_form(rw.gateway, f"/rag/{rag['id']}/files", rw.keys["editor"], _parts(*files))
    assert "at most 100 files" in _refusal(answer)["message"]
    fields = {"model": gw_world.model("whisper"), "response_format": "verbose_json", "language": "en"}
    fields |= {"temperature": "0.2", "prompt": "p", "stream": "false", "include[]": "logprobs"}
    texts = [([f'Content-Disposition: form-data; name="{k}"'.encode()], v.encode()) for k, v in fields.items()]
    grains = [([b'Content-Disposition: form-data; name="timestamp_granularities[]"'], g) for g in (b"word", b"segment")]
    speakers = [([b'Content-Disposition: form-data; name="known_speaker_names[]"'], b"ann")] * 4
    audio = ([b'Content-Disposition: form-data; name="file"; filename="a.wav"'], b"RIFF")
    body = _parts(*texts, *grains, *speakers, audio)
    answer = await _post_form(
        gateway.base_url.removesuffix("/v1"), "/v1/audio/transcriptions", gw_world.keys["all"], body
    )
    assert answer.status == 200, answer.body[:300]


async def test_a_nested_multipart_part_is_400_on_rag_files(rw: RagWorld, server: Server) -> None:
    """It was skipped, its inner parts read (and so unbounded) to get past it."""
    rag = await rw.rag()
    inner = b'--inner\r\nContent-Disposition: form-data; name="a"\r\n\r\nx\r\n--inner--'
    nested = ([b'Content-Disposition: form-data; name="more"', b"Content-Type: multipart/mixed; boundary=inner"], inner)
    body = _parts((FILE_PART, b"Some text about lighthouses."), nested)
    answer = await _post_form(rw.gateway, f"/rag/{rag['id']}/files", rw.keys["editor"], body)
    error = _refusal(answer)
    assert "Nested multipart" in error["message"] and error["param"] == "file", error
    await _nothing_stored(rw, server, rag)


@pytest.mark.parametrize(
    ("part_headers", "content", "says"),
    [
        pytest.param(
            [b"Content-Type: text/plain; charset=bogus-xx"], b"doc-1", "not a known text encoding", id="charset"
        ),
        pytest.param([b"Content-Transfer-Encoding: x-weird"], b"doc-1", "Content-Transfer-Encoding", id="encoding"),
        pytest.param([b"Content-Transfer-Encoding: base64"], b"d!c-1", "does not decode", id="bad-base64"),
        pytest.param([], b"doc-\xff\xfe", "external_id is not UTF-8 text", id="not-utf8"),
    ],
)
async def test_an_undecodable_external_id_is_400_naming_it(
    rw: RagWorld, server: Server, part_headers: list[bytes], content: bytes, says: str
) -> None:
    rag = await rw.rag()
    external_id = ([b'Content-Disposition: form-data; name="external_id"', *part_headers], content)
    body = _parts((FILE_PART, b"Some text about lighthouses."), external_id)
    answer = await _post_form(rw.gateway, f"/rag/{rag['id']}/files", rw.keys["editor"], body)
    error = _refusal(answer)
    assert says in error["message"] and error["param"] == "external_id", error
    await _nothing_stored(rw, server, rag)


async def test_an_unparseable_content_disposition_is_400_and_stays_out_of_the_log(
    rw: RagWorld, gateway: Gateway, gw_world: GatewayWorld
) -> None:
    """aiohttp warns with the header's text (a `warnings.warn`, which Python printed to stderr): the log must not
    carry it (server.logs), and the client learns which header is wrong rather than that its file is missing."""
    canary = f"zebra-canary-{secrets.token_hex(4)}-hdr"
    unparseable = [f'Content-Disposition: form-data; name="file"; filename="a.txt"; {canary}'.encode()]
    rag = await rw.rag()
    answer = await _post_form(rw.gateway, f"/rag/{rag['id']}/files", rw.keys["editor"], _form(unparseable))
    error = _refusal(answer)
    assert "Content-Disposition" in error["message"] and error["param"] == "file", error
    model = ([b'Content-Disposition: form-data; name="model"'], gw_world.model("whisper").encode())
    body = _parts(model, (unparseable, b"RIFF....WAVE"))
    answer = await _post_form(
        gateway.base_url.removesuffix("/v1"), "/v1/audio/transcriptions", gw_world.keys["all"], body
    )
    error = _refusal(answer)
    assert "Content-Disposition" in error["message"] and error["param"] == "file", error
    assert canary not in gateway.log()


@pytest.mark.parametrize(
    ("document", "status", "says"),
    [
        pytest.param(
            docx_with({"word/document.xml": document_xml(_PARA * 700_000)}),
            400,
            "word/document.xml inflates",
            id="bomb",
        ),
        pytest.param(
            docx_with({"word/document.xml": b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "x">]><d>&a;</d>'}),
            400,
            "word/document.xml has a DTD",
            id="dtd",
        ),
        pytest.param(
            docx_with({"word/document.xml": document_xml("<p>" * 100_000 + "</p>" * 100_000)}),
            400,
            "word/document.xml nests XML elements deeper than 128 levels",
            id="deep",
        ),
        pytest.param(
            docx_with({"word/document.xml": document_xml("<w:p><w:r></w:p>")}),
            400,
            "word/document.xml is not well-formed XML",
            id="malformed",
        ),
        # Well-formed XML that is not the part python-docx expects: it fails with AttributeError or TypeError.
        pytest.param(docx_with({"[Content_Types].xml": b"<Types/>"}), 400, "not a readable DOCX", id="bare-types"),
        pytest.param(
            docx_with({"word/document.xml": document_xml("").replace(b"<w:body></w:body>", b"")}),
            400,
            "not a readable DOCX",
            id="no-body",
        ),
        pytest.param(
            docx_with({"_rels/.rels": _RELS_WITHOUT_TARGET}), 400, "not a readable DOCX", id="relationship-no-target"
        ),
    ],
)
async def test_hostile_docx_is_refused_naming_the_problem(
    rw: RagWorld, server: Server, document: bytes, status: int, says: str
) -> None:
    rag = await rw.rag()
    form = multipart([("evil.docx", document, None)])
    answer = await call("POST", url(rw, rag, "/files"), rw.keys["editor"], data=form)
    assert answer.status == status, answer
    assert answer.body["error"]["message"].startswith("evil.docx: ")
    assert says in answer.body["error"]["message"] and answer.body["error"]["param"] == "file"
    await _nothing_stored(rw, server, rag)


async def test_html_its_parser_would_take_minutes_on_is_400_and_the_next_upload_parses(
    rw: RagWorld, server: Server
) -> None:
    """100,000 nested divs (500 KB): lexbor's tree builder is quadratic in depth (20 s of CPU; in a thread it would
    hold the gateway's GIL throughout). The parse sandbox stops it at the test gateway's 2 s, plus 2 s per MiB."""
    rag = await rw.rag()
    deep = ("<div>" * 100_000 + "x").encode()
    form = multipart([("deep.html", deep, "text/html")])
    answer = await call("POST", url(rw, rag, "/files"), rw.keys["editor"], data=form)
    assert answer.status == 400, answer
    assert answer.body["error"]["message"].startswith("deep.html: parsing the upload takes more than the 3 s of CPU")
    assert answer.body["error"]["param"] == "file"
    await _nothing_stored(rw, server, rag)
    form = multipart([("ok.html", b"<div>" * 1_000 + b"kept", "text/html")])
    assert (await call("POST", url(rw, rag, "/files"), rw.keys["editor"], data=form)).status == 201


async def test_an_upload_s_files_share_one_cpu_budget_by_their_total_size(rw: RagWorld, server: Server) -> None:
    """Eight files of 30,000 nested divs (150 KB, ~1.4 s of CPU each): each alone parses within a file's 3 s, but
    together they are given what one file of 1.2 MB is (2 s + 2 s a MiB, 5 s), not eight times the base."""
    rag = await rw.rag()
    deep = ("<div>" * 30_000 + "x").encode()
    form = multipart([(f"deep{i}.html", deep, "text/html") for i in range(8)])
    answer = await call("POST", url(rw, rag, "/files"), rw.keys["editor"], data=form)
    assert answer.status == 400, answer
    assert "parsing the upload takes more than the 5 s of CPU" in answer.body["error"]["message"]
    await _nothing_stored(rw, server, rag)


async def test_html_whose_tree_outgrows_the_parser_s_memory_is_413(rw: RagWorld, server: Server) -> None:
    """72 KiB under every size and depth bound: a paragraph opens 990 distinct `<b>`s, then each of 8,000 paragraphs
    reopens them all (the HTML standard's "reconstruct the active formatting elements"), a 2.8 GiB tree in lexbor.
    Parsed in the gateway's own process it took that from the gateway; the test gateway's parsers get 512 MiB."""
    rag = await rw.rag()
    misnested = "<p>" + "".join(f"<b id={i}>" for i in range(990)) + "</p><p>x" * 8000
    form = multipart([("misnested.html", misnested.encode(), "text/html")])
    answer = await call("POST", url(rw, rag, "/files"), rw.keys["editor"], data=form)
    assert answer.status == 413, answer
    assert answer.body["error"]["message"] == (
        "misnested.html: parsing the file needs more memory than a parser is given"
    )
    await _nothing_stored(rw, server, rag)


async def test_the_quota_charges_the_stored_text_not_the_upload(rw: RagWorld, server: Server) -> None:
    rag = await rw.rag()
    paragraphs = [f"Paragraph {i} describes the lighthouse keeper's log of passing ships." for i in range(40)]
    document = docx(paragraphs)
    form = multipart([("log.docx", document, None)])
    answer = await call("POST", url(rw, rag, "/files"), rw.keys["editor"], data=form)
    assert answer.status == 201, answer
    stored = answer.body["data"][0]
    assert stored["chunk_count"] > 1
    text = len("\n".join(paragraphs).encode())  # chunking at 64 tokens with no overlap keeps every character once
    assert text - stored["chunk_count"] <= stored["bytes"] <= text  # the joins between chunks are not stored
    assert stored["bytes"] < len(document) // 10  # the DOCX itself weighs far more: its XML and styles
    assert await _used(rw, server, rag) == stored["bytes"]
    assert (await call("DELETE", url(rw, rag, f"/files/{stored['id']}"), rw.keys["editor"])).status == 200
    assert await _used(rw, server, rag) == 0


# --- JSON uploads: a refusal names the item it is about (found by probing) --------------------------------------


@pytest.mark.parametrize("path", ["/internal/files", "/files/content"])
async def test_a_batch_naming_one_external_id_twice_is_refused(rw: RagWorld, server: Server, path: str) -> None:
    """Both were stored, the second replacing the first in the same transaction, and the answer listed the first as
    ready though it was gone."""
    rag = await rw.rag()
    items = [
        {"external_id": "wiki/dup", "text": "The first text about canals."},
        {"external_id": "wiki/dup", "text": "The second text about windmills."},
    ]
    if path == "/files/content":
        items = [{"external_id": i["external_id"], "filename": "a.txt", "content": i["text"]} for i in items]
    answer = await call("POST", url(rw, rag, path), rw.keys["editor"], json={"files": items})
    assert answer.status == 400, answer
    assert answer.body["error"]["param"] == "files[1].external_id", answer.body
    await _nothing_stored(rw, server, rag)


@pytest.mark.parametrize(
    ("item", "param"),
    [
        pytest.param({"filename": {"a": 1}}, "body.filename", id="filename-an-object"),  # was stored as "{'a': 1}"
        pytest.param({"title": ["x.txt"]}, "body.title", id="title-a-list"),
        pytest.param({"filename": "two\nlines.txt"}, "body.filename", id="filename-control-character"),
        pytest.param({"text": " \n\t "}, "body.text", id="no-text"),  # named `file`, a field the body lacks
    ],
)
async def test_a_scraper_upload_s_refusal_names_its_field(
    rw: RagWorld, server: Server, item: dict[str, Any], param: str
) -> None:
    rag = await rw.rag()
    body = {"external_id": "doc-1", "text": "Some text about lighthouses.", **item}
    answer = await call("POST", url(rw, rag, "/internal/files"), rw.keys["editor"], json=body)
    assert answer.status == 400, answer
    assert answer.body["error"]["param"] == param, answer.body
    await _nothing_stored(rw, server, rag)


@pytest.mark.parametrize(
    ("item", "param"),
    [
        pytest.param({"filename": "two\nlines.txt"}, "files[1].filename", id="control-character"),
        pytest.param({"filename": "n" * 600 + ".txt"}, "files[1].filename", id="too-long"),
        pytest.param({"content_type": "text/plain; x=" + "y" * 200}, "files[1].content_type", id="long-content-type"),
        pytest.param({"content_type": "text/plain\r\nX-Other: 1"}, "files[1].content_type", id="content-type-crlf"),
        pytest.param({"content": "   "}, "files[1]", id="empty"),
        pytest.param({"filename": "a.pdf", "content": "not a PDF"}, "files[1]", id="not-a-pdf"),
    ],
)
async def test_a_json_batch_s_refusal_names_the_item(
    rw: RagWorld, server: Server, item: dict[str, Any], param: str
) -> None:
    """Refusals of an item's name, content type or content said `param: "file"`, a field the JSON body lacks."""
    rag = await rw.rag()
    files = [
        {"filename": "fine.txt", "content": "Fine text."},
        {"filename": "a.txt", "content": "Lighthouses.", **item},
    ]
    answer = await call("POST", url(rw, rag, "/files/content"), rw.keys["editor"], json={"files": files})
    assert answer.status == 400, answer
    assert answer.body["error"]["param"] == param, answer.body
    await _nothing_stored(rw, server, rag)
