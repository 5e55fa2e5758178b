"""`switchboard rag ingest`: a folder uploaded through the real gateway, with a summary naming each failure."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.rag_http import call
from tests.test_rag_http import RagWorld, rw, url

__all__ = ["rw"]


async def test_ingest_uploads_a_folder_and_reports_failures(rw: RagWorld, tmp_path: Path) -> None:
    rag = await rw.rag()
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("Alpacas are kept for their soft wool.")
    (tmp_path / "sub" / "b.md").write_text("# Llamas\n\nLlamas carry loads in the Andes.")
    (tmp_path / "sub" / "c.csv").write_text("animal,home\nvicuna,Peru\n")
    (tmp_path / "empty.txt").write_text("   ")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    env = {**os.environ, "SWITCHBOARD_API_KEY": rw.keys["editor"]}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server.cli",
        "rag",
        "ingest",
        str(tmp_path),
        "--rag",
        rag["id"],
        "--gateway",
        rw.gateway,
        "--metadata",
        '{"source_group_ids": ["farm"]}',
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    summary = out.decode()
    assert proc.returncode == 1, (summary, err.decode())
    assert "uploaded 3 files" in summary and "1 failed; 1 skipped" in summary
    assert "empty.txt: HTTP 400: empty.txt: the file parses to empty content" in summary
    assert "skipped " + str(tmp_path / "photo.png") in summary
    assert "ingest" in err.decode()  # the progress bar (on stderr)
    listed = await call(
        "GET",
        url(rw, rag, "/files"),
        rw.keys["editor"],
        params={"include_total": "true", "metadata.source_group_ids": "farm"},
    )
    assert listed.body["total"] == 3
    assert sorted(f["filename"] for f in listed.body["data"]) == ["a.txt", "b.md", "c.csv"]
