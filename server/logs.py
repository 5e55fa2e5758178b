"""Logging for every process: the level from settings, and no library logger that can carry content.

Logs never carry model input or output (spec), at any level. At DEBUG, database drivers log SQL parameters
(aiosqlite logs every statement with its parameters, psycopg and SQLAlchemy's echo likewise), and the HTTP/MCP
client libraries log message bodies; those parameters and bodies are prompts, completions and conversation items.
So these loggers are held at WARNING whatever SWITCHBOARD_LOG_LEVEL says; the engine also hides parameters from
its exception messages (server.store.db), which errors are logged with.
"""

from __future__ import annotations

import logging

__all__ = ["CONTENT_CARRYING_LOGGERS", "configure_logging"]

CONTENT_CARRYING_LOGGERS = (
    "aiosqlite",
    "sqlalchemy.engine",
    "sqlalchemy.pool",
    "sqlalchemy.orm",
    "sqlalchemy.dialects",
    "psycopg",
    "mcp",
    "httpx",
    "httpcore",
    "hpack",
    "openai",
    "aiohttp.client",
)


def configure_logging(level: str, fmt: str) -> None:
    logging.basicConfig(level=level, format=fmt)
    for name in CONTENT_CARRYING_LOGGERS:
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() < logging.WARNING:
            logger.setLevel(logging.WARNING)
