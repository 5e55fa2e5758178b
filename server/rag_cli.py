"""`switchboard rag ingest PATH... --rag ID`: upload files and folders (recursively) to a RAG through its /files API.

The API key comes from `--key` or, better (argv is visible to other users), `SWITCHBOARD_API_KEY`. Files whose
extension no RAG parser knows are skipped and counted, and so is whatever a folder holds that is not a regular file
(a device, a FIFO, a symlink to one: reading it may never end); a path given that is neither a regular file nor a
folder is refused, as a missing one is. No file is read past the upload limit (`SWITCHBOARD_RAG_MAX_FILE_BYTES`): a
larger one is a failure, not sent. The summary lists every failure with its reason (the server's, for an upload),
and the exit status is 1 when anything failed.

Unchanged files are not uploaded again. The API exposes no content hash, so the CLI remembers, per RAG, the SHA-256
and file id of what it uploaded (`<var dir>/rag-ingest/<rag id>.json`, 0600) and skips a file whose hash is
unchanged while the RAG still holds that file (one listing of the RAG's files tells). `--force` uploads everything.
Each file is uploaded with its absolute path as `external_id`, so a changed or forced file replaces its earlier
version on the server instead of adding a second copy.

Two progress bars: bytes as they are sent (the files stream from disk), and chunks as the gateway reports them
embedded and indexed (files large enough to be embedded in the background count once they are registered, as
`queued`). Several uploads are in flight at once (`--concurrency`, default 16): the gateway embeds the chunks of
concurrent uploads to one RAG together (gateway.rag.batcher), so it is concurrency that lets a folder of small files
reach the embedding model in full batches.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import stat
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import aiohttp
import orjson
from tqdm import tqdm

from server import varfiles
from server.domain.rag_parsing import SUPPORTED_EXTENSIONS

__all__ = ["add_parser", "run"]

_CHUNK = 1 << 16
_MAX_EXTERNAL_ID = 512


def add_parser(sub: Any) -> None:
    rag = sub.add_parser("rag", help="work with RAG deployments")
    rag_sub = rag.add_subparsers(dest="rag_command", required=True)
    ingest = rag_sub.add_parser("ingest", help="upload files and folders to a RAG")
    ingest.add_argument("paths", nargs="+", type=Path, help="files or folders (walked recursively)")
    ingest.add_argument("--rag", required=True, help="the RAG's id (rag_…)")
    ingest.add_argument("--gateway", default="", help="gateway base URL (default: SWITCHBOARD_GATEWAY_PUBLIC_URL)")
    ingest.add_argument("--key", default="", help="API key (default: the SWITCHBOARD_API_KEY environment variable)")
    ingest.add_argument("--metadata", default="", help="JSON object of metadata given to every file")
    ingest.add_argument("--concurrency", type=int, default=16, help="uploads in flight at once")
    ingest.add_argument("--force", action="store_true", help="upload every file, even those uploaded unchanged before")


@dataclass
class Outcome:
    uploaded: int = 0
    uploaded_bytes: int = 0
    chunks: int = 0  # embedded and indexed when the upload answered
    queued_chunks: int = 0  # of files embedded in the background
    unchanged: int = 0
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # and why
    failures: list[tuple[Path, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Ingest:
    url: str  # {rag_url}/files
    key: str
    metadata: str
    concurrency: int
    state_path: Path
    force: bool
    max_file_bytes: int


_UNSUPPORTED, _NOT_REGULAR = "unsupported type", "not a regular file"


def collect(paths: list[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """(files to upload, files skipped and why), in a stable order."""
    found: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for path in paths:
        if not path.is_dir():
            found.append(path)
            continue
        for entry in sorted(p for p in path.rglob("*") if not p.is_dir()):
            if entry.is_file():
                found.append(entry)
            else:
                skipped.append((entry, _NOT_REGULAR))
    accepted = [p for p in found if p.suffix.lower() in SUPPORTED_EXTENSIONS]
    skipped += [(p, _UNSUPPORTED) for p in found if p.suffix.lower() not in SUPPORTED_EXTENSIONS]
    return accepted, sorted(skipped)


def run(args: argparse.Namespace, gateway_default: str, var_dir: Path, max_file_bytes: int) -> int:
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
    odd = [p for p in args.paths if not p.is_dir() and not p.is_file()]
    if odd:
        print("not a regular file or folder: " + ", ".join(str(p) for p in odd))
        return 2
    files, skipped = collect(args.paths)
    job = Ingest(
        url=f"{(args.gateway or gateway_default).rstrip('/')}/rag/{args.rag}/files",
        key=key,
        metadata=args.metadata,
        concurrency=max(1, args.concurrency),
        state_path=var_dir / "rag-ingest" / f"{Path(args.rag).name}.json",
        force=args.force,
        max_file_bytes=max_file_bytes,
    )
    outcome = asyncio.run(_ingest(job, files))
    outcome.skipped = skipped
    _summary(outcome)
    return 1 if outcome.failures else 0


@dataclass(frozen=True)
class Fingerprint:
    sha256: str
    size: int  # the limit and one more byte: the file is larger, and was not read further


class _NotRegular(OSError):
    pass


def _open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, when it is a regular file. Checked on the file opened, not by its name (it may have
    been replaced since it was listed), and opened without waiting: opening a FIFO waits for a writer."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotRegular(_NOT_REGULAR)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _fingerprint(path: Path, limit: int) -> Fingerprint:
    digest, size = hashlib.sha256(), 0
    with _open_regular(path) as fh:
        while size <= limit and (chunk := fh.read(min(1 << 20, limit + 1 - size))):
            digest.update(chunk)
            size += len(chunk)
    return Fingerprint(digest.hexdigest(), size)


def _external_id(path: Path) -> str:
    name = path.resolve().as_posix()
    if len(name) <= _MAX_EXTERNAL_ID and name.isprintable():
        return name
    return "sha256:" + hashlib.sha256(name.encode(errors="surrogateescape")).hexdigest()


def _load_state(path: Path) -> dict[str, dict[str, str]]:
    try:
        state = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    files = state.get("files") if isinstance(state, dict) else None
    return files if isinstance(files, dict) else {}


async def _ingest(job: Ingest, files: list[Path]) -> Outcome:
    outcome = Outcome()
    state = _load_state(job.state_path)
    seen: dict[Path, Fingerprint] = {}
    for path in files:
        try:
            found = await asyncio.to_thread(_fingerprint, path, job.max_file_bytes)
        except OSError as exc:
            outcome.failures.append((path, exc.strerror or str(exc)))
            continue
        if found.size > job.max_file_bytes:
            outcome.failures.append((path, f"larger than the upload limit of {job.max_file_bytes} bytes; not sent"))
        else:
            seen[path] = found
    files = list(seen)
    headers = {"Authorization": f"Bearer {job.key}"}
    timeout = aiohttp.ClientTimeout(total=None, sock_read=900)
    async with aiohttp.ClientSession(timeout=timeout, headers=headers) as http:
        held = {} if job.force else await _held_files(http, job.url)
        todo = []
        for path in files:
            known = state.get(_external_id(path), {})
            still_held = held.get(known.get("file_id", "")) in ("ready", "processing")
            if known.get("sha256") == seen[path].sha256 and still_held:
                outcome.unchanged += 1
            else:
                todo.append(path)
        try:
            await _upload_all(http, job, todo, seen=seen, state=state, outcome=outcome)
        finally:
            varfiles.replace(job.state_path, orjson.dumps({"files": state}, option=orjson.OPT_INDENT_2))
    return outcome


async def _held_files(http: aiohttp.ClientSession, url: str) -> dict[str, str]:
    """The RAG's file ids and their status; empty when the listing fails (then every file is uploaded)."""
    held: dict[str, str] = {}
    after = ""
    while True:
        params = {"limit": "100", **({"after": after} if after else {})}
        try:
            async with http.get(url, params=params) as resp:
                if resp.status != 200:
                    return {}
                page = await resp.json()
        except (aiohttp.ClientError, ValueError):
            return {}
        held.update({f["id"]: f["status"] for f in page["data"]})
        if not page.get("has_more") or not page.get("next_cursor"):
            return held
        after = page["next_cursor"]


async def _upload_all(
    http: aiohttp.ClientSession,
    job: Ingest,
    files: list[Path],
    *,
    seen: dict[Path, Fingerprint],
    state: dict[str, dict[str, str]],
    outcome: Outcome,
) -> None:
    gate = asyncio.Semaphore(job.concurrency)
    bar = tqdm(total=sum(seen[p].size for p in files), unit="B", unit_scale=True, desc="ingest", dynamic_ncols=True)
    chunk_bar = tqdm(unit=" chunks", desc="indexed", dynamic_ncols=True, position=1)

    async def one(path: Path) -> None:
        async with gate:
            external_id = _external_id(path)
            form = aiohttp.FormData()
            form.add_field("file", _streamed(path, seen[path].size, bar), filename=path.name)
            form.add_field("external_id", external_id)
            if job.metadata:
                form.add_field("metadata", job.metadata, content_type="application/json")
            try:
                async with http.post(job.url, data=form) as resp:
                    body = await resp.read()
                    if resp.status == 201:
                        outcome.uploaded += 1
                        outcome.uploaded_bytes += seen[path].size
                        answer = orjson.loads(body)["data"][0]
                        state[external_id] = {"sha256": seen[path].sha256, "file_id": answer["id"]}
                        _count_chunks(answer, outcome, chunk_bar)
                    else:
                        outcome.failures.append((path, _reason(resp.status, body)))
            except aiohttp.ClientError as exc:
                outcome.failures.append((path, f"connection failed ({type(exc).__name__})"))
            except OSError as exc:  # reading the file, replaced since it was fingerprinted
                outcome.failures.append((path, exc.strerror or str(exc)))
            bar.set_postfix(
                files=f"{outcome.uploaded + len(outcome.failures)}/{len(files)}", failed=len(outcome.failures)
            )

    try:
        await asyncio.gather(*(one(p) for p in files))
    finally:
        chunk_bar.close()
        bar.close()


def _count_chunks(answer: dict[str, Any], outcome: Outcome, bar: tqdm[Any]) -> None:
    count = int(answer.get("chunk_count") or 0)
    if answer.get("status") == "ready":
        outcome.chunks += count
        bar.update(count)
    else:
        outcome.queued_chunks += count
        bar.set_postfix(queued=outcome.queued_chunks)


async def _streamed(path: Path, size: int, bar: tqdm[Any]) -> AsyncIterator[bytes]:
    """The file's first `size` bytes (as fingerprinted: a file grown since is not read past them) from disk, counted
    on the bar as the upload takes them."""
    with await asyncio.to_thread(_open_regular, path) as fh:
        while size > 0 and (chunk := await asyncio.to_thread(fh.read, min(_CHUNK, size))):
            size -= len(chunk)
            yield chunk
            bar.update(len(chunk))


def _reason(status: int, body: bytes) -> str:
    try:
        message = orjson.loads(body)["error"]["message"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        message = "no error message"
    return f"HTTP {status}: {message}"


def _summary(outcome: Outcome) -> None:
    print(
        f"uploaded {outcome.uploaded} files ({outcome.uploaded_bytes} bytes, {outcome.chunks} chunks indexed"
        + (f", {outcome.queued_chunks} queued" if outcome.queued_chunks else "")
        + f"); {outcome.unchanged} unchanged; "
        f"{len(outcome.failures)} failed; {len(outcome.skipped)} skipped"
    )
    for path, reason in outcome.failures:
        print(f"  failed  {path}: {reason}")
    for path, why in outcome.skipped:
        print(f"  skipped {path} ({why})")
