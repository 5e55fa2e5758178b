"""A fake Prometheus answering `/api/v1/query` (GET or POST form) in Prometheus's JSON shape, recording queries.

It evaluates instant-vector selectors the way Prometheus does for the subset we send: `{label op "value", ...}`
or `name{...}`, with `=`, `!=`, `=~`, `!~` (regexes fully anchored); anything else is answered 400 bad_data, so a
malformed query fails the test instead of matching everything. `mode` switches the answer: "up" (the series),
"error" (HTTP 500 with an error body), "garbage" (HTTP 200 that is not JSON), "not-vector" (a matrix answer).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = ["FakePrometheus", "Sample"]

Sample = tuple[dict[str, str], float | str]
_NAME = re.compile(r"\s*([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{(.*)\}\s*$|\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*$", re.S)
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')


def _unquote(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _matchers(query: str) -> list[tuple[str, str, str]] | None:
    found = _NAME.match(query)
    if found is None:
        return None
    if found.group(3):
        return [("__name__", "=", found.group(3))]
    matchers = [("__name__", "=", found.group(1))] if found.group(1) else []
    body, pos = found.group(2), 0
    while pos < len(body.strip()):
        m = _MATCHER.match(body, pos)
        if m is None:
            return None
        matchers.append((m.group(1), m.group(2), _unquote(m.group(3))))
        pos = m.end()
    return matchers or None


def _matches(labels: dict[str, str], matchers: list[tuple[str, str, str]]) -> bool:
    for name, op, value in matchers:
        have = labels.get(name, "")
        ok = {
            "=": have == value,
            "!=": have != value,
            "=~": re.fullmatch(value, have) is not None,
            "!~": re.fullmatch(value, have) is None,
        }[op]
        if not ok:
            return False
    return True


@dataclass
class FakePrometheus:
    series: list[Sample] = field(default_factory=list)
    mode: str = "up"
    queries: list[str] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/api/v1/query", self._query)
        return app

    async def _query(self, request: web.Request) -> web.Response:
        params: Any = await request.post() if request.method == "POST" else request.query
        query = str(params.get("query", ""))
        self.queries.append(query)
        if self.mode == "error":
            return web.json_response({"status": "error", "errorType": "internal", "error": "boom"}, status=500)
        if self.mode == "garbage":
            return web.Response(text="<html>proxy error</html>", content_type="text/html")
        if self.mode == "not-vector":
            return web.json_response({"status": "success", "data": {"resultType": "matrix", "result": []}})
        matchers = _matchers(query)
        if matchers is None:
            return web.json_response({"status": "error", "errorType": "bad_data", "error": "parse error"}, status=400)
        now = time.time()
        result = [
            {"metric": labels, "value": [now, str(value)]}
            for labels, value in self.series
            if _matches(labels, matchers)
        ]
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": result}})
