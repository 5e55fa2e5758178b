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
    for name in ("mcp.client.sse", "switchboard.gateway"):
        try:
            raise TimeoutError("read of http://127.0.0.1/mcp?token=secret timed out")
        except TimeoutError:
            logging.getLogger(name).exception("Error in %s", "sse_reader")
    """
)


def _lines(level: str) -> list[tuple[str, str]]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(level=level)], capture_output=True, text=True, check=True, timeout=60
    )
    # Lines without a separator are a traceback's (our own logger's).
    return [tuple(line.split("|")[:2]) for line in done.stderr.splitlines() if "|" in line]  # type: ignore[misc]


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
        ("mcp.client.sse", "ERROR"),
    ]


def test_a_library_logs_no_traceback_and_no_exception_text_while_our_own_errors_keep_their_frames() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(level="WARNING")], capture_output=True, text=True, check=True, timeout=60
    )
    library, own = done.stderr.split("switchboard.gateway|ERROR|")
    assert "mcp.client.sse|ERROR|Error in sse_reader (TimeoutError)" in library
    assert "Traceback" not in library and "secret" not in library
    assert "Traceback" in own  # our own unexpected failures keep their stack for the operator
    assert "TimeoutError" in own and "secret" not in own  # but not the text, which may quote what was read


CHAINED = textwrap.dedent(
    """
    import json
    import logging
    from server.logs import configure_logging

    configure_logging("WARNING", "%(name)s|%(levelname)s|%(message)s")
    log = logging.getLogger("gateway.somewhere")
    document = '{"answer": ' + "zebra" + '-canary-output}'  # built at run time: the frames show the source only
    try:
        try:
            json.loads(document)
        except ValueError as exc:
            raise RuntimeError(document) from exc
    except RuntimeError:
        log.exception("a model's answer could not be read")
    try:
        failure = KeyError(document)
        failure.add_note(document)
        raise ExceptionGroup(document, [failure, SyntaxError(document, ("f.py", 1, 2, document, 1, 3))])
    except ExceptionGroup:
        log.exception("several failed")
    """
)


def test_our_own_tracebacks_keep_chains_and_groups_but_no_exception_s_text() -> None:
    done = subprocess.run([sys.executable, "-c", CHAINED], capture_output=True, text=True, check=True, timeout=60)
    assert "zebra-canary" not in done.stderr, done.stderr
    for shown in ("JSONDecodeError", "direct cause", "RuntimeError", "Exception Group Traceback", "KeyError"):
        assert shown in done.stderr, done.stderr


def test_the_configured_level_still_holds_our_own_loggers() -> None:
    lines = _lines("WARNING")
    assert not [name for name, level in lines if level == "DEBUG"]
    assert ("httpx2", "WARNING") in lines


WARNINGS = textwrap.dedent(
    """
    import warnings
    from aiohttp.multipart import parse_content_disposition
    from server.logs import configure_logging

    configure_logging("DEBUG", "%(name)s|%(levelname)s|%(message)s")
    parse_content_disposition('form-data; name="file"; filename="a.txt"; zebra-canary-hdr')  # a client's header
    parse_content_disposition('form-data; name="file"; bad key=zebra-canary-param')
    warnings.warn("a library's warning quoting secret-body", UserWarning)
    """
)


def test_a_warning_is_logged_without_its_text_and_aiohttps_client_caused_ones_not_at_all() -> None:
    done = subprocess.run([sys.executable, "-c", WARNINGS], capture_output=True, text=True, check=True, timeout=60)
    assert "zebra-canary" not in done.stderr and "BadContentDisposition" not in done.stderr, done.stderr
    assert "secret-body" not in done.stderr, done.stderr
    [line] = done.stderr.splitlines()  # only the library's own warning, with its category and place
    assert line.startswith("py.warnings|WARNING|UserWarning raised at <string>:"), line
