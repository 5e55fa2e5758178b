"""`switchboard rag ingest`: a folder uploaded through the real gateway, with a summary naming each failure; unchanged
files are not uploaded again (unless forced), changed ones replace their earlier version."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ONE_BACKEND
from tests.rag_http import call
from tests.test_rag_http import RagWorld, rw, url

__all__ = ["rw"]

# The CLI is a client of the gateway's RAG API, whose storage is tested on both databases (test_rag_http).
pytestmark = ONE_BACKEND


async def _ingest(
    rw: RagWorld, rag: dict[str, Any], var_dir: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[int | None, str, str]:
    """The CLI's exit status, stdout and stderr; killed, and None for its status, when it runs over a minute."""
    env = {**os.environ, "SWITCHBOARD_API_KEY": rw.keys["editor"], "SWITCHBOARD_VAR_DIR": str(var_dir), **(env or {})}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server.cli",
        "rag",
        "ingest",
        *args,
        "--rag",
        rag["id"],
        "--gateway",
        rw.gateway,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        return None, out.decode(), err.decode()
    return proc.returncode, out.decode(), err.decode()


async def _listed(rw: RagWorld, rag: dict[str, Any]) -> list[dict[str, Any]]:
    listed = await call("GET", url(rw, rag, "/files"), rw.keys["editor"], params={"include_total": "true"})
    assert listed.body["total"] == len(listed.body["data"])
    return list(listed.body["data"])


async def test_a_second_ingest_uploads_only_what_changed(rw: RagWorld, tmp_path: Path) -> None:
    rag = await rw.rag()
    docs, var_dir = tmp_path / "docs", tmp_path / "var"
    docs.mkdir()
    (docs / "a.txt").write_text("Alpacas are kept for their soft wool.")
    (docs / "b.md").write_text("# Llamas\n\nLlamas carry loads in the Andes.")
    code, out, err = await _ingest(rw, rag, var_dir, str(docs))
    assert code == 0 and "uploaded 2 files" in out and "0 unchanged" in out, (out, err)
    assert "2 chunks indexed" in out and "indexed" in err  # progress by chunks: one chunk per short file
    first = {f["filename"]: f for f in await _listed(rw, rag)}
    assert first["a.txt"]["external_id"] == str((docs / "a.txt").resolve())

    code, out, err = await _ingest(rw, rag, var_dir, str(docs))
    assert code == 0 and "uploaded 0 files (0 bytes, 0 chunks indexed); 2 unchanged" in out, (out, err)
    assert {f["id"] for f in await _listed(rw, rag)} == {f["id"] for f in first.values()}

    (docs / "a.txt").write_text("Alpacas are shorn once a year, in spring.")
    code, out, err = await _ingest(rw, rag, var_dir, str(docs))
    assert "uploaded 1 files" in out and "1 unchanged" in out, (out, err)
    now = {f["filename"]: f for f in await _listed(rw, rag)}
    assert now["b.md"]["id"] == first["b.md"]["id"] and now["a.txt"]["id"] != first["a.txt"]["id"]  # replaced

    # A file deleted on the server is uploaded again even though it did not change here.
    assert (await call("DELETE", url(rw, rag, f"/files/{now['b.md']['id']}"), rw.keys["editor"])).status == 200
    code, out, err = await _ingest(rw, rag, var_dir, str(docs))
    assert "uploaded 1 files" in out and "1 unchanged" in out, (out, err)

    code, out, err = await _ingest(rw, rag, var_dir, str(docs), "--force")
    assert code == 0 and "uploaded 2 files" in out and "0 unchanged" in out, (out, err)
    assert sorted(f["filename"] for f in await _listed(rw, rag)) == ["a.txt", "b.md"]  # replaced, not doubled


async def test_ingest_uploads_a_folder_and_reports_failures(rw: RagWorld, tmp_path: Path) -> None:
    rag = await rw.rag()
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("Alpacas are kept for their soft wool.")
    (tmp_path / "sub" / "b.md").write_text("# Llamas\n\nLlamas carry loads in the Andes.")
    (tmp_path / "sub" / "c.csv").write_text("animal,home\nvicuna,Peru\n")
    (tmp_path / "empty.txt").write_text("   ")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    code, summary, err = await _ingest(
        rw,
        rag,
        tmp_path.with_name(tmp_path.name + "-var"),
        str(tmp_path),
        "--metadata",
        '{"source_group_ids": ["farm"]}',
    )
    assert code == 1, (summary, err)
    assert "uploaded 3 files" in summary and "1 failed; 1 skipped" in summary
    assert "empty.txt: HTTP 400: empty.txt: the file parses to empty content" in summary
    assert "skipped " + str(tmp_path / "photo.png") in summary
    assert "ingest" in err  # the progress bar (on stderr)
    listed = await call(
        "GET",
        url(rw, rag, "/files"),
        rw.keys["editor"],
        params={"include_total": "true", "metadata.source_group_ids": "farm"},
    )
    assert listed.body["total"] == 3
    assert sorted(f["filename"] for f in listed.body["data"]) == ["a.txt", "b.md", "c.csv"]


def _not_regular(folder: Path) -> list[Path]:
    """A symlink to /dev/zero and a FIFO, both named as text files: reading either never ends (the FIFO's open waits
    for a writer that never comes)."""
    (folder / "zero.txt").symlink_to("/dev/zero")
    os.mkfifo(folder / "pipe.txt")
    return [folder / "zero.txt", folder / "pipe.txt"]


async def test_a_path_that_is_not_a_regular_file_is_refused_before_anything_is_read(
    rw: RagWorld, tmp_path: Path
) -> None:
    rag = await rw.rag()
    for path in _not_regular(tmp_path):
        code, out, err = await _ingest(rw, rag, tmp_path / "var", str(path))
        assert (code, out) == (2, f"not a regular file or folder: {path}\n"), (code, out, err)
    assert await _listed(rw, rag) == []


async def test_a_folder_skips_what_is_not_a_regular_file(rw: RagWorld, tmp_path: Path) -> None:
    rag = await rw.rag()
    docs = tmp_path / "docs"
    docs.mkdir()
    odd = _not_regular(docs)
    (docs / "a.txt").write_text("Alpacas are kept for their soft wool.")
    code, out, err = await _ingest(rw, rag, tmp_path / "var", str(docs))
    assert code == 0 and "uploaded 1 files" in out and "0 failed; 2 skipped" in out, (code, out, err)
    for path in odd:
        assert f"skipped {path} (not a regular file)" in out, out
    assert [f["filename"] for f in await _listed(rw, rag)] == ["a.txt"]


async def test_a_file_over_the_upload_limit_is_not_read_past_it_nor_sent(rw: RagWorld, tmp_path: Path) -> None:
    rag = await rw.rag()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "big.txt").write_text("Alpacas hum. " * 200)  # 2,600 bytes
    (docs / "small.txt").write_text("Llamas carry loads in the Andes.")
    limit = {"SWITCHBOARD_RAG_MAX_FILE_BYTES": "2048"}
    code, out, err = await _ingest(rw, rag, tmp_path / "var", str(docs), env=limit)
    assert code == 1 and "uploaded 1 files" in out and "1 failed" in out, (code, out, err)
    assert f"failed  {docs / 'big.txt'}: larger than the upload limit of 2048 bytes" in out, out
    assert [f["filename"] for f in await _listed(rw, rag)] == ["small.txt"]
