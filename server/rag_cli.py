"""`switchboard rag ingest PATH... --rag ID`: upload files and folders (recursively) to a RAG through its /files API.

The API key comes from `--key` or, better (argv is visible to other users), `SWITCHBOARD_API_KEY`. Files whose
extension no RAG parser knows are skipped and counted. A progress bar shows files, bytes and failures; the summary
lists every failure with the server's reason, and the exit status is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from tqdm import tqdm

from server.domain.rag_parsing import SUPPORTED_EXTENSIONS

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    rag = sub.add_parser("rag", help="work with RAG deployments")
    rag_sub = rag.add_subparsers(dest="rag_command", required=True)
    ingest = rag_sub.add_parser("ingest", help="upload files and folders to a RAG")
    ingest.add_argument("paths", nargs="+", type=Path, help="files or folders (walked recursively)")
    ingest.add_argument("--rag", required=True, help="the RAG's id (rag_…)")
    ingest.add_argument("--gateway", default="", help="gateway base URL (default: SWITCHBOARD_GATEWAY_PUBLIC_URL)")
    ingest.add_argument("--key", default="", help="API key (default: the SWITCHBOARD_API_KEY environment variable)")
    ingest.add_argument("--metadata", default="", help="JSON object of metadata given to every file")
    ingest.add_argument("--concurrency", type=int, default=4, help="uploads in flight at once")


@dataclass
class Outcome:
    uploaded: int = 0
    uploaded_bytes: int = 0
    skipped: list[Path] = field(default_factory=list)
    failures: list[tuple[Path, str]] = field(default_factory=list)


def collect(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(files to upload, files skipped as unsupported), in a stable order."""
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])
    accepted = [p for p in found if p.suffix.lower() in SUPPORTED_EXTENSIONS]
    return accepted, [p for p in found if p.suffix.lower() not in SUPPORTED_EXTENSIONS]


def run(args: argparse.Namespace, gateway_default: str) -> int:
    key = args.key or os.environ.get("SWITCHBOARD_API_KEY", "")
    if not key:
        print("an API key is required: set SWITCHBOARD_API_KEY (or pass --key)")
        return 2
    if args.metadata:
        try:
            metadata = orjson.loads(args.metadata)
        except orjson.JSONDecodeError:
            metadata = None
        if not isinstance(metadata, dict):
            print("--metadata must be a JSON object")
            return 2
    missing = [p for p in args.paths if not p.exists()]
    if missing:
        print("not found: " + ", ".join(str(p) for p in missing))
        return 2
    files, skipped = collect(args.paths)
    url = f"{(args.gateway or gateway_default).rstrip('/')}/rag/{args.rag}/files"
    outcome = asyncio.run(_upload_all(url, key, files, args.metadata, max(1, args.concurrency)))
    outcome.skipped = skipped
    _summary(outcome)
    return 1 if outcome.failures else 0


async def _upload_all(url: str, key: str, files: list[Path], metadata: str, concurrency: int) -> Outcome:
    outcome = Outcome()
    total = sum(p.stat().st_size for p in files)
    gate = asyncio.Semaphore(concurrency)
    bar = tqdm(total=total, unit="B", unit_scale=True, desc="ingest", dynamic_ncols=True)
    headers = {"Authorization": f"Bearer {key}"}
    timeout = aiohttp.ClientTimeout(total=None, sock_read=900)

    async def one(http: aiohttp.ClientSession, path: Path) -> None:
        async with gate:
            data = await asyncio.to_thread(path.read_bytes)
            form = aiohttp.FormData()
            form.add_field("file", data, filename=path.name)
            if metadata:
                form.add_field("metadata", metadata, content_type="application/json")
            try:
                async with http.post(url, data=form, headers=headers) as resp:
                    body = await resp.read()
                    if resp.status == 201:
                        outcome.uploaded += 1
                        outcome.uploaded_bytes += len(data)
                    else:
                        outcome.failures.append((path, _reason(resp.status, body)))
            except aiohttp.ClientError as exc:
                outcome.failures.append((path, f"connection failed ({type(exc).__name__})"))
            bar.update(len(data))
            bar.set_postfix(
                files=f"{outcome.uploaded + len(outcome.failures)}/{len(files)}", failed=len(outcome.failures)
            )

    async with aiohttp.ClientSession(timeout=timeout) as http:
        await asyncio.gather(*(one(http, p) for p in files))
    bar.close()
    return outcome


def _reason(status: int, body: bytes) -> str:
    try:
        message = orjson.loads(body)["error"]["message"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        message = "no error message"
    return f"HTTP {status}: {message}"


def _summary(outcome: Outcome) -> None:
    print(
        f"uploaded {outcome.uploaded} files ({outcome.uploaded_bytes} bytes); "
        f"{len(outcome.failures)} failed; {len(outcome.skipped)} skipped (unsupported type)"
    )
    for path, reason in outcome.failures:
        print(f"  failed  {path}: {reason}")
    for path in outcome.skipped:
        print(f"  skipped {path}")
