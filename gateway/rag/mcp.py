"""Each RAG as an MCP server at {rag_url}/mcp with one tool, `search` (the mcp SDK's server, streamable HTTP).

One `MCPServer` serves every RAG: the gateway authenticates the bearer key (middleware) and authorises it on the RAG
(`can_invoke`, 404 otherwise) before the request reaches the SDK, which runs as an ASGI app bridged into aiohttp
here. The tool finds its RAG and caller through the aiohttp request placed in the ASGI scope, never through headers
(those are client input). The server is stateless with JSON responses, so any replica answers any request and
nothing lives in memory between calls; both the 2026-07-28 protocol and legacy `initialize` clients work.
Each `search` is metered like a /context call (CALL_KIND_RAG_CONTEXT).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

from gateway.middleware import MiB, read_body
from gateway.rag import service
from server.asgi_bridge import asgi_lifespan, serve_asgi
from server.domain.rag_filters import parse_filters
from server.errors import SwitchboardError, wire_error_for
from server.store.rag_index import SearchWeights

__all__ = ["SEARCH_TOOL", "mcp_endpoint", "mcp_lifespan", "search_rag"]

_SCOPE_KEY = "switchboard.request"
_ASGI = web.AppKey("rag_mcp_asgi", object)
_MAX_TOP_K = 50
# JSON-RPC messages (a search's query and filters) are small; aiohttp's own bound for a body is the transcription
# upload's, and a gzip body inflates to it from a few hundred kilobytes.
_MAX_MESSAGE_BYTES = MiB


SEARCH_TOOL = "search"


def _build() -> Any:
    mcp = MCPServer(
        "switchboard-rag",
        version="1.0.0",
        instructions="Search this RAG's documents: ranked passages with their file and metadata.",
    )
    _register(mcp)
    return mcp.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        # Callers authenticate with a bearer key (checked before this app runs); browser-origin checks do not apply.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


def _register(mcp: MCPServer) -> None:
    @mcp.tool()
    async def search(query: str, ctx: Context, top_k: int = 5, filters: dict[str, Any] | None = None) -> dict[str, Any]:
        """Search the RAG's documents (hybrid: meaning and keywords). `filters` matches file metadata, e.g.
        {"source_group_ids": ["g1"]}. Returns the best passages, best first, with score, file and metadata."""
        request: web.Request = ctx.request_context.request.scope[_SCOPE_KEY]  # type: ignore[union-attr]
        return await search_rag(request, request.match_info["rag_id"], query, top_k, filters)


async def search_rag(
    request: web.Request,
    rag_id: str,
    query: str,
    top_k: int,
    filters: dict[str, Any] | None,
    *,
    delegated: bool = False,
) -> dict[str, Any]:
    """The `search` tool: of this MCP server, and of the Responses tool loop's in-process RAG sources (which call it
    directly rather than through HTTP to this same gateway). `delegated`: the RAG is a preset agent's default tool,
    searched on the agent's authority (its creator's access was checked when the agent was saved)."""
    started, status = time.perf_counter(), 200
    try:
        if not query.strip():
            raise ToolError("query must not be empty")
        if not 1 <= top_k <= _MAX_TOP_K:
            raise ToolError(f"top_k must be between 1 and {_MAX_TOP_K}")
        rag = await service.authorize(request, rag_id, delegated=delegated)
        hits, files = await service.context(
            request,
            rag,
            query=query,
            top_k=top_k,
            conditions=parse_filters(filters),
            score_threshold=rag.score_threshold,
            weights=SearchWeights(dense=rag.dense_weight, lexical=rag.lexical_weight),
        )
    except SwitchboardError as exc:
        status = wire_error_for(exc).http_status
        raise ToolError(exc.message) from None  # returned to the model so it can correct its arguments
    except ToolError:
        status = 400
        raise
    finally:
        service.meter_context(request, rag_id, status, started)
    results = [
        {
            "text": h.text,
            "score": round(h.score, 6),
            "file_id": h.file_id,
            "filename": files[h.file_id].filename,
            "metadata": files[h.file_id].metadata,
        }
        for h in hits
    ]
    return {"results": results}


_SCHEMA: list[tuple[str, dict[str, Any]]] = []  # built once per process


async def search_tool_schema() -> tuple[str, dict[str, Any]]:
    """(description, input schema) of the `search` tool, exactly as the MCP server lists it."""
    if not _SCHEMA:
        mcp = MCPServer("switchboard-rag")
        _register(mcp)
        tool = next(t for t in await mcp.list_tools() if t.name == SEARCH_TOOL)
        _SCHEMA.append((tool.description or "", dict(tool.input_schema)))
    return _SCHEMA[0]


async def mcp_lifespan(app: web.Application) -> AsyncIterator[None]:
    """cleanup_ctx: build the SDK app and run its ASGI lifespan (its session manager) for the process's life."""
    asgi = _build()
    app[_ASGI] = asgi
    async with contextlib.asynccontextmanager(asgi_lifespan(asgi))(app):
        yield


async def mcp_endpoint(request: web.Request) -> web.StreamResponse:
    """{rag_url}/mcp: authorise, then hand the request to the SDK's ASGI app and stream its answer back."""
    await service.authorize(request)
    body = await read_body(request, _MAX_MESSAGE_BYTES)  # a body its Content-Encoding does not decode: a 400
    return await serve_asgi(request, request.app[_ASGI], path="/mcp", extra={_SCOPE_KEY: request}, body=body)
