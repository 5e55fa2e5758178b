"""The text a RAG file row keeps besides its content (its file name and content type) must be UTF-8: a multipart
part's header bytes that are not arrive as lone surrogates, which neither database's driver can write (a 500, on
SQLite and PostgreSQL alike). server.domain.rag_files refuses them whichever way they come (gateway.multipart
refuses undecodable part names first, for every form; the content type is the RAG's alone), as a 400 on `file` that
stores nothing."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from server.domain.rag_files import validate_filename
from server.errors import InvalidArgument
from tests.conftest import Server
from tests.rag_http import call
from tests.rawhttp import raw_request
from tests.test_rag_http import RagWorld, _used, rw, url

__all__ = ["rw"]

BOUNDARY = b"sbEdgeBoundary"


def _form(part_headers: list[bytes]) -> bytes:
    return (
        b"--" + BOUNDARY + b"\r\n" + b"\r\n".join(part_headers) + b"\r\n\r\nSome text about lighthouses.\r\n"
        b"--" + BOUNDARY + b"--\r\n"
    )


async def test_a_content_type_that_is_not_utf8_is_400_and_stores_nothing(rw: RagWorld, server: Server) -> None:
    rag = await rw.rag()
    body = _form(
        [b'Content-Disposition: form-data; name="file"; filename="a.txt"', b"Content-Type: text/\xff\xfeplain"]
    )
    headers = [
        (b"Authorization", f"Bearer {rw.keys['editor']}".encode()),
        (b"Content-Type", b"multipart/form-data; boundary=" + BOUNDARY),
    ]
    answer = await raw_request(rw.gateway, "POST", f"/rag/{rag['id']}/files", headers, body)
    assert answer.status == 400, answer.body[:300]
    error: dict[str, Any] = orjson.loads(answer.body)["error"]
    assert error["message"] == "a.txt: its content type is not UTF-8 text" and error["param"] == "file", error
    listed = await call("GET", url(rw, rag, "/files"), rw.keys["editor"], params={"include_total": "true"})
    assert listed.body["total"] == 0 and await _used(rw, server, rag) == 0


@pytest.mark.parametrize("name", ["a\udcff\udcfe.txt", "\ud800.txt"])
def test_a_file_name_that_is_not_utf8_is_refused_on_file(name: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        validate_filename(name)
    assert refused.value.message == "a file name is not UTF-8 text" and refused.value.field == "file"
