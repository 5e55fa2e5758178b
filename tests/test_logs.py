"""The logging rule (server.logs): at SWITCHBOARD_LOG_LEVEL=DEBUG our own loggers log at DEBUG, while every other
logger (a client library's, one added by the next dependency, one that sets its own level lower) logs WARNING and
above only. Run in a fresh interpreter, as a server or gateway process configures it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import logging
    from server.logs import configure_logging

    configure_logging({level!r}, "%(name)s|%(levelname)s|%(message)s")
    for name in ("switchboard.gateway", "server.store.rag_index.postgres", "gateway.anything", "switchboard"):
        logging.getLogger(name).debug("own debug")
    for name in ("httpx2", "httpcore2.http11", "mcp.client", "a_library_nobody_listed.sub", "serverless", "gateways"):
        logging.getLogger(name).debug("foreign debug")
        logging.getLogger(name).info("foreign info")
        logging.getLogger(name).warning("foreign warning")
    selfish = logging.getLogger("selfish_library")
    selfish.setLevel(logging.DEBUG)  # a library that lowers its own level on import
    selfish.debug("foreign debug")
    selfish.error("foreign error")
    logging.info("foreign info")  # the root logger itself: libraries that log through logging.info()
    """
)


def _lines(level: str) -> list[tuple[str, str]]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(level=level)], capture_output=True, text=True, check=True, timeout=60
    )
    return [tuple(line.split("|")[:2]) for line in done.stderr.splitlines()]  # type: ignore[misc]


def test_at_debug_only_our_own_loggers_go_below_warning() -> None:
    lines = _lines("DEBUG")
    own = [name for name, level in lines if level == "DEBUG"]
    assert own == ["switchboard.gateway", "server.store.rag_index.postgres", "gateway.anything", "switchboard"]
    foreign = [(name, level) for name, level in lines if name not in own]
    assert foreign == [
        ("httpx2", "WARNING"),
        ("httpcore2.http11", "WARNING"),
        ("mcp.client", "WARNING"),
        ("a_library_nobody_listed.sub", "WARNING"),
        ("serverless", "WARNING"),
        ("gateways", "WARNING"),
        ("selfish_library", "ERROR"),
    ]


def test_the_configured_level_still_holds_our_own_loggers() -> None:
    lines = _lines("WARNING")
    assert not [name for name, level in lines if level == "DEBUG"]
    assert ("httpx2", "WARNING") in lines
