"""The `mcp` tools of a Responses request: OpenAI's shape, resolved to registered MCP servers the caller may use.

`{"type": "mcp", "server_label", "server_url"?, "allowed_tools"?, "require_approval"?, "authorization"?,
"headers"?}`: `server_label` names a registered ExternalMcpServer (server.domain.mcp_servers decides who may invoke
it); a `server_url`, when given, must be that server's registered URL (no ad-hoc servers). Servers that need a
per-user OAuth token get it in `authorization`; stored bearer tokens and static headers are attached here, server
side, and never echoed. Approval defaults to "always", as OpenAI's does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from gateway.context import DB, PRINCIPAL
from server.crypto import SecretBox
from server.domain import mcp_servers
from server.egress import EgressGuard
from server.errors import InvalidArgument
from server.mcp.pool import SessionPool
from server.mcp.tool_client import ToolSource, tls_context
from server.settings import Settings

__all__ = ["McpRuntime", "McpToolSpec", "RagSource", "resolve"]

_OAUTH_HINT = (
    "obtain the user's token with platform.agents.v1.ExternalMcpServerService/GetExternalMcpServerOAuthMetadata "
    "and ExchangeExternalMcpOAuthToken"
)


@dataclass(frozen=True)
class McpRuntime:
    """What the gateway process holds for the tool loop: the one egress guard, the secret box, the bounds, and the
    pool of MCP sessions (`close()` on app cleanup)."""

    guard: EgressGuard
    box: SecretBox
    settings: Settings
    pool: SessionPool = field(init=False)

    def __post_init__(self) -> None:
        settings = self.settings
        pool = SessionPool(
            self.guard,
            tls=tls_context(settings.mcp_trusted_ca_file),
            timeout=settings.mcp_tool_call_timeout_seconds,
            max_result_bytes=settings.mcp_max_tool_result_bytes,
            idle_seconds=settings.mcp_session_idle_seconds,
            max_sessions=settings.mcp_session_pool_size,
            list_ttl_seconds=settings.mcp_tools_list_cache_seconds,
        )
        object.__setattr__(self, "pool", pool)  # frozen: set once, here

    async def close(self) -> None:
        await self.pool.close()


MCP_RUNTIME = web.AppKey("mcp_runtime", McpRuntime)


@dataclass(frozen=True)
class RagSource:
    """A RAG served in process as the loop's tool source (gateway.responses.rag_tools): its `{rag_url}/mcp` search
    tool, called directly rather than over HTTP to this same gateway (whose own port the egress guard refuses)."""

    rag_id: str
    display_name: str
    max_results: int | None  # a file_search tool's max_num_results: the cap of each search
    delegated: bool = False  # searched on a preset agent's authority rather than the caller's


@dataclass(frozen=True)
class McpToolSpec:
    source: ToolSource
    allowed: frozenset[str] | None  # None: every tool the server lists
    approval_always: bool  # the default for tools the filters do not name
    approval_never: frozenset[str] = field(default_factory=frozenset)
    approval_required: frozenset[str] = field(default_factory=frozenset)
    rag: RagSource | None = None  # set: an in-process RAG source, its calls shown as file_search_call items

    def needs_approval(self, tool: str) -> bool:
        if tool in self.approval_required:
            return True
        if tool in self.approval_never:
            return False
        return self.approval_always


def _names(value: Any, field_name: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise InvalidArgument(f"'{field_name}' must be an array of tool names.", field=field_name)
    return frozenset(value)


def _allowed(value: Any, where: str) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, dict):
        if value.get("read_only"):
            raise InvalidArgument("'read_only' tool filters are not supported.", field=f"{where}.read_only")
        return _names(value.get("tool_names", []), f"{where}.tool_names")
    return _names(value, where)


def _approval(value: Any, where: str) -> tuple[bool, frozenset[str], frozenset[str]]:
    if value is None or value == "always":
        return True, frozenset(), frozenset()
    if value == "never":
        return False, frozenset(), frozenset()
    if isinstance(value, dict) and set(value) <= {"always", "never"}:
        sets: list[frozenset[str]] = []
        for key in ("never", "always"):
            part = value.get(key) or {}
            if not isinstance(part, dict):
                raise InvalidArgument(f"'{where}.{key}' must be a tool filter object.", field=f"{where}.{key}")
            sets.append(_names(part.get("tool_names", []), f"{where}.{key}.tool_names"))
        return True, sets[0], sets[1]
    raise InvalidArgument(f"'{where}' must be 'always', 'never' or a filter object.", field=where)


async def resolve(request: web.Request, tools: Any) -> list[McpToolSpec]:
    """The request's `mcp` tools, each a registered server the caller may invoke; the first problem is a 400 naming
    its field."""
    if not isinstance(tools, list):
        return []
    runtime = request.app[MCP_RUNTIME]
    specs: list[McpToolSpec] = []
    labels: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "mcp":
            continue
        where = f"tools[{i}]"
        label = tool.get("server_label")
        if not isinstance(label, str) or not label:
            raise InvalidArgument(
                f"'{where}.server_label' must name a registered MCP server.", field=f"{where}.server_label"
            )
        if label in labels:
            raise InvalidArgument(f"MCP server {label!r} is given twice.", field=f"{where}.server_label")
        labels.add(label)
        if tool.get("connector_id") is not None:
            raise InvalidArgument(
                "Connectors are not supported; use a registered MCP server.", field=f"{where}.connector_id"
            )
        async with request.app[DB].read() as session:
            server = await mcp_servers.invocation(
                session, request[PRINCIPAL], label, runtime.box, field=f"{where}.server_label"
            )
        url = tool.get("server_url")
        if url is not None and url != server.server_url:
            raise InvalidArgument(
                f"'{where}.server_url' is not the registered URL of MCP server {label!r}; only registered servers"
                " can be used.",
                field=f"{where}.server_url",
            )
        headers = mcp_servers.request_headers(tool.get("headers"), f"{where}.headers")
        token = tool.get("authorization")
        if token is not None and (not isinstance(token, str) or not token):
            raise InvalidArgument(f"'{where}.authorization' must be an access token.", field=f"{where}.authorization")
        if server.user_auth_required:
            if not token:
                raise InvalidArgument(
                    f"MCP server {label!r} needs the user's own OAuth access token in '{where}.authorization': "
                    + _OAUTH_HINT
                    + ".",
                    field=f"{where}.authorization",
                )
            headers["Authorization"] = f"Bearer {mcp_servers.bearer_token(token, f'{where}.authorization')}"
        elif token:
            raise InvalidArgument(
                f"MCP server {label!r} does not take a per-user token; its credentials are held by the platform.",
                field=f"{where}.authorization",
            )
        # The registration's own headers win over the caller's, in any letter case (HTTP names are case-blind: both
        # would be sent, and a server reading the first would take the caller's).
        registered = {name.lower() for name in server.headers}
        headers = {name: value for name, value in headers.items() if name.lower() not in registered}
        headers.update(server.headers)
        always, never, required = _approval(tool.get("require_approval"), f"{where}.require_approval")
        specs.append(
            McpToolSpec(
                source=ToolSource(label, server.server_url, headers),
                allowed=_allowed(tool.get("allowed_tools"), f"{where}.allowed_tools"),
                approval_always=always,
                approval_never=never,
                approval_required=required,
            )
        )
    return specs
