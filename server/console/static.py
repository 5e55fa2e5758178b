"""The web console's files, served by the management server at `/console` (same origin as the API).

- `/console/assets/*`: the build's content-hashed files, `Cache-Control: immutable` (a new build has new names).
- `/console/config.json`: what the front end needs to know about this server (no secrets), `no-store`.
- any other `/console/...` path: index.html (`no-cache`), so every page of the single-page app is a real URL that
  can be reloaded or bookmarked.

Every answer carries the console's Content-Security-Policy (scripts, styles and connections from this origin only,
plus the gateway for chat; no inline code, no framing) and nosniff / no-referrer. The build is read from
`SWITCHBOARD_CONSOLE_DIR` (default: the repository's console/dist); when it is not built, `/console` answers 404
saying how to build it, and nothing else changes. Files are read into memory once per build (a build is a few
hundred kilobytes) with their gzip form, and read again when index.html changes, so a rebuild needs no restart.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from server.settings import Settings
from server.traffic import Receive, Scope, Send

__all__ = [
    "PREFIX",
    "ConsoleFiles",
    "ConsoleStatic",
    "console_directory",
    "console_origin",
    "content_security_policy",
    "is_built",
]


PREFIX = "/console"
_ASSETS = f"{PREFIX}/assets/"
_NOT_BUILT = (
    "The web console is not built on this server. Build it with `make run` (or `cd console && npm ci && npm run "
    "build`), or point SWITCHBOARD_CONSOLE_DIR at a built console (the folder holding index.html).\n"
)
_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".woff2": "font/woff2",
}
# Worth compressing; images and fonts already are.
_COMPRESSIBLE = (".js", ".css", ".html", ".json", ".svg", ".map", ".txt")


def console_directory(settings: Settings) -> Path:
    """SWITCHBOARD_CONSOLE_DIR, else the repository's console/dist (present in a checkout after a build; absent from
    an installed wheel)."""
    if settings.console_dir:
        return Path(settings.console_dir)
    return Path(__file__).resolve().parents[2] / "console" / "dist"


def is_built(settings: Settings) -> bool:
    return (console_directory(settings) / "index.html").is_file()


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def console_origin(settings: Settings) -> str:
    """The browser origin the console is served from (SWITCHBOARD_CONSOLE_PUBLIC_URL, else this server's address)."""
    return _origin(settings.console_url)


def content_security_policy(gateway_url: str) -> str:
    """The console's CSP: only this origin's scripts and styles (no inline code), connections here and to the
    gateway (chat, RAG uploads), no framing, no plugins, forms only back here (sign-out goes through fetch, so its
    way on to the identity provider is a navigation, not a form's redirect)."""
    return "; ".join(
        (
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            f"connect-src 'self' {_origin(gateway_url)}",
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "object-src 'none'",
        )
    )


@dataclass(frozen=True)
class _File:
    body: bytes
    gzipped: bytes | None
    content_type: str
    etag: str  # of `body`; `gzipped` has one of its own (`_gzip_etag`)


def _load(path: Path) -> _File:
    body = path.read_bytes()
    suffix = path.suffix.lower()
    content_type = _TYPES.get(suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    gzipped = gzip.compress(body, compresslevel=9, mtime=0) if suffix in _COMPRESSIBLE else None
    if gzipped is not None and len(gzipped) >= len(body):
        gzipped = None
    return _File(body, gzipped, content_type, f'"{hashlib.sha256(body).hexdigest()[:32]}"')


def _gzip_etag(etag: str) -> str:
    """The gzip form's ETag. A strong ETag names one representation (RFC 9110 §8.8.3), and the gzip form is not the
    identity one: a cache revalidating the one must not be told it may serve the other."""
    return etag.removesuffix('"') + '-gzip"'


def _gzip_accepted(accept_encoding: str) -> bool:
    """Whether Accept-Encoding allows gzip (RFC 9110 §12.5.3): named, or covered by `*`, with a weight above 0."""
    weights: dict[str, float] = {}
    for item in accept_encoding.split(","):
        coding, *parameters = (part.strip() for part in item.split(";"))
        weight = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights[coding.lower()] = weight
    return weights.get("gzip", weights.get("*", 0.0)) > 0


def _none_match(if_none_match: str, etag: str) -> bool:
    """Whether If-None-Match names `etag`, by the weak comparison RFC 9110 §13.1.2 requires (`W/` ignored), in a
    list, or as `*`."""
    if if_none_match.strip() == "*":
        return True
    return any(tag.strip().removeprefix("W/") == etag for tag in if_none_match.split(","))


class ConsoleFiles:
    """One build's files in memory, keyed by their path below the build folder; reloaded when index.html changes."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._stamp: int | None = None
        self._files: dict[str, _File] = {}

    def current(self) -> dict[str, _File] | None:
        """The build's files, or None when there is no build."""
        index = self._directory / "index.html"
        try:
            stamp = index.stat().st_mtime_ns
        except OSError:
            self._stamp, self._files = None, {}
            return None
        if stamp != self._stamp:
            root = self._directory.resolve()
            files = {}
            for path in sorted(root.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    files[path.relative_to(root).as_posix()] = _load(path)
            self._stamp, self._files = stamp, files
        return self._files


class ConsoleStatic:
    """ASGI app for every `/console` path the session routes (server.console.session) do not take."""

    def __init__(self, directory: Path, config: dict[str, Any], gateway_url: str) -> None:
        self._files = ConsoleFiles(directory)
        self._config = json.dumps(config, separators=(",", ":")).encode()
        self._security = [
            (b"content-security-policy", content_security_policy(gateway_url).encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
            (b"x-frame-options", b"DENY"),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        method: str = scope["method"]
        if path != PREFIX and not path.startswith(f"{PREFIX}/"):  # a neighbour such as /consoles
            await self._plain(send, 404, b"Not found.\n")
            return
        if method not in ("GET", "HEAD"):
            await self._plain(send, 405, b"The console's files are read with GET.\n", [(b"allow", b"GET, HEAD")])
            return
        if path == PREFIX:
            query = scope.get("query_string", b"")
            location = f"{PREFIX}/" + (f"?{query.decode('latin-1')}" if query else "")
            await self._plain(send, 308, b"", [(b"location", location.encode("latin-1"))])
            return
        if path == f"{PREFIX}/config.json":
            await self._send(scope, send, _File(self._config, None, "application/json", ""), b"no-store")
            return
        files = self._files.current()
        if files is None:
            await self._plain(send, 404, _NOT_BUILT.encode())
            return
        if path.startswith(_ASSETS):
            found = files.get(path.removeprefix(f"{PREFIX}/"))
            if found is None:
                await self._plain(send, 404, b"No such console asset (an older build's? reload the page).\n")
                return
            await self._send(scope, send, found, b"public, max-age=31536000, immutable")
            return
        index = files.get("index.html")
        if index is None:  # unreachable: current() returns None without index.html
            await self._plain(send, 404, _NOT_BUILT.encode())
            return
        # Every other path is a page of the single-page app: its shell, revalidated on each load.
        await self._send(scope, send, index, b"no-cache")

    async def _send(self, scope: Scope, send: Send, found: _File, cache: bytes) -> None:
        request = {name: value.decode("latin-1") for name, value in scope["headers"]}
        headers = [(b"content-type", found.content_type.encode()), (b"cache-control", cache), *self._security]
        body, etag, coding = found.body, found.etag, []
        if found.gzipped is not None:
            headers.append((b"vary", b"Accept-Encoding"))  # on a 304 too (RFC 9110 §15.4.5)
            if _gzip_accepted(request.get(b"accept-encoding", "")):
                body, etag, coding = found.gzipped, _gzip_etag(found.etag), [(b"content-encoding", b"gzip")]
        if etag:
            headers.append((b"etag", etag.encode()))
            if _none_match(request.get(b"if-none-match", ""), etag):
                await send({"type": "http.response.start", "status": 304, "headers": headers})
                await send({"type": "http.response.body", "body": b""})
                return
        headers += [*coding, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})

    async def _plain(
        self, send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            *self._security,
            *(extra or []),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
