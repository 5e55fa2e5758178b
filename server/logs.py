"""Logging for every process: our own loggers at the level from settings, every other logger at WARNING at most.

Logs never carry model input or output (spec), at any level. At DEBUG, database drivers log SQL parameters
(aiosqlite logs every statement with its parameters, psycopg and SQLAlchemy's echo likewise), and the HTTP/MCP
client libraries log URLs, headers and message bodies; those parameters and bodies are prompts, completions and
conversation items. A list of such libraries went stale each time a dependency changed its logger names (the `mcp`
SDK moved to `httpx2`/`httpcore2`), so the rule is by ownership instead: the root logger stays at WARNING and only
loggers under our own names (`OWN_LOGGERS`) follow SWITCHBOARD_LOG_LEVEL; a library logger inherits WARNING from the
root. A library that sets its own logger's level lower is still held: a filter on the root's handlers drops its
records below WARNING. A library's record also loses its traceback, keeping only the exception's type: the `mcp`
SDK logs a full stack (with the exception's text) for a read timeout or a dropped stream that our own code has
already turned into a tool error, and a library's exception text may carry the URL or body it was handling. The
engine also hides parameters from its exception messages (server.store.db), which
errors are logged with. Our own loggers keep a traceback's frames, for the operator, but not any exception's text
(`TracebackWithoutText`): an unexpected error's message is whatever its raiser put there, and a library's (a
pydantic validation error quoting a model's output, a ValueError quoting a parsed file) carries the content it was
reading through our `log.exception`.

Warnings (`warnings.warn`) are logged too, under the `py.warnings` logger, with their category and where they were
raised but not their text: Python printed a warning's text to stderr, and a library's warning may quote what it was
handling; aiohttp's multipart parser warns with the Content-Disposition header a client sent. Those two aiohttp
warnings are ignored outright: a client can cause one with every request, which is answered with a 400 anyway
(gateway.multipart).
"""

from __future__ import annotations

import logging
import traceback
import warnings
from types import TracebackType
from typing import TextIO

from aiohttp.multipart import BadContentDispositionHeader, BadContentDispositionParam

__all__ = ["OWN_LOGGERS", "HoldForeignLoggers", "TracebackWithoutText", "configure_logging"]

# `switchboard.*` is what our modules name their loggers; `server.*`/`gateway.*` are `getLogger(__name__)` ones.
OWN_LOGGERS = ("switchboard", "server", "gateway")
_OWN_PREFIXES = tuple(f"{name}." for name in OWN_LOGGERS)


def _is_own(name: str) -> bool:
    return name in OWN_LOGGERS or name.startswith(_OWN_PREFIXES)


class HoldForeignLoggers(logging.Filter):
    """Passes a record from our own loggers at any level, any other record only at WARNING or above and with its
    traceback reduced to the exception's type."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _is_own(record.name):
            return True
        if record.levelno < logging.WARNING:
            return False
        if record.exc_info:
            kind = record.exc_info[0]
            record.msg = f"{record.getMessage()} ({kind.__name__ if kind is not None else 'exception'})"
            record.args = None
            record.exc_info = record.exc_text = None
        return True


class TracebackWithoutText(logging.Formatter):
    """A traceback with every frame, chained and grouped exceptions included, but each exception's type alone."""

    def formatException(
        self, ei: tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]
    ) -> str:
        kind, value, tb = ei
        if kind is None or value is None:
            return ""
        described = traceback.TracebackException(kind, value, tb, compact=True)
        seen: set[int] = set()
        pending = [described]
        while pending:  # the chain (cause, context) and an exception group's members, each once
            one = pending.pop()
            if id(one) in seen:
                continue
            seen.add(id(one))
            # traceback.TracebackException keeps an exception's text as `_str` (and a SyntaxError's source line
            # and message apart) since 3.10; test_logs fails if a later Python renames them
            one._str = ""  # type: ignore[attr-defined]
            one.__notes__ = None
            one.text = one.msg = ""
            pending.extend(e for e in (one.__cause__, one.__context__, *(one.exceptions or ())) if e is not None)
        return "".join(described.format()).rstrip("\n")


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def _log_warning(  # noqa: PLR0917 (warnings.showwarning's signature)
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """`warnings.showwarning` for every process: the warning's category and place, never its text."""
    logging.getLogger("py.warnings").warning("%s raised at %s:%s", category.__name__, filename, lineno)


def configure_logging(level: str, fmt: str = LOG_FORMAT) -> None:
    logging.basicConfig(level=logging.WARNING, format=fmt)
    root = logging.getLogger()
    root.setLevel(logging.WARNING)
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(level)
    for handler in root.handlers:
        if not any(isinstance(f, HoldForeignLoggers) for f in handler.filters):
            handler.addFilter(HoldForeignLoggers())
        handler.setFormatter(TracebackWithoutText(fmt))
    for client_caused in (BadContentDispositionHeader, BadContentDispositionParam):
        warnings.filterwarnings("ignore", category=client_caused)
    warnings.showwarning = _log_warning
