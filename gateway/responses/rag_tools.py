"""RAGs as tools of the Responses loop: `file_search` tools, the key's RAGs by default, and the in-process source.

Which RAGs a turn can search:
- `{"type": "file_search", "vector_store_ids": [<RAG ids>], "max_num_results"?: 1..50}` (OpenAI's shape, as the SDK
  sends it) selects RAGs explicitly; each must be one the key may use (server.permissions `can_invoke`), otherwise
  400 naming `tools[i].vector_store_ids` (the same answer for unknown and forbidden ids). `[]` selects none.
  `filters` and `ranking_options` are refused (400): the RAG's own retrieval settings apply, and the model may pass
  the search tool's own `filters` argument.
- Without a `file_search` tool, the RAGs the key can read are offered by default (the spec: "RAG tools are available
  by default"), at most `Settings.responses_default_rag_tools` of them (the first by owner, then name; 0: none), so a
  key that reaches many RAGs does not flood every request with tool definitions.

Each RAG joins the loop as its own tool source: the `search` tool of its `{rag_url}/mcp` server (gateway.rag.mcp),
listed with the same schema and run by the same function, in process. An HTTP hop would be a call from the gateway
to its own port, which the egress guard refuses by design; the in-process call keeps the caller's authorisation and
the search's metering (CALL_KIND_RAG_CONTEXT). Its calls appear as OpenAI `file_search_call` items; their `results`
are filled only when the request's `include` names `file_search_call.results`, as OpenAI does.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web
from mcp.server.mcpserver.exceptions import ToolError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.context import ACCESS, DB, PRINCIPAL, SETTINGS
from gateway.rag.mcp import SEARCH_TOOL, search_rag, search_tool_schema
from gateway.responses.mcp_tools import McpToolSpec, RagSource
from server.domain import rags
from server.domain.json_values import is_integer
from server.domain.principal import Principal
from server.errors import InvalidArgument, SwitchboardError
from server.mcp.tool_client import McpTool, ToolFailure, ToolResult, ToolSource
from server.permissions import ResourceKind, ResourceRef, can_invoke

__all__ = ["INCLUDE_RESULTS", "RagConnection", "resolve", "results_of"]

INCLUDE_RESULTS = "file_search_call.results"
_MAX_IDS = 16
_MAX_RESULTS = 50


def _ids(tool: dict[str, Any], where: str) -> list[str]:
    ids = tool.get("vector_store_ids")
    field = f"{where}.vector_store_ids"
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
        raise InvalidArgument(f"'{field}' must be an array of RAG ids.", field=field)
    if len(ids) > _MAX_IDS:
        raise InvalidArgument(f"'{field}' takes at most {_MAX_IDS} RAG ids.", field=field)
    return list(dict.fromkeys(ids))


def _max_results(tool: dict[str, Any], where: str) -> int | None:
    value = tool.get("max_num_results")
    if value is None:
        return None
    if not is_integer(value) or not 1 <= value <= _MAX_RESULTS:
        field = f"{where}.max_num_results"
        raise InvalidArgument(f"'{field}' must be an integer between 1 and {_MAX_RESULTS}.", field=field)
    return value


def _refuse_unsupported(tool: dict[str, Any], where: str) -> None:
    for name in ("filters", "ranking_options"):
        if tool.get(name) is not None:
            raise InvalidArgument(
                f"'{where}.{name}' is not supported: the RAG's own retrieval settings apply.", field=f"{where}.{name}"
            )


async def resolve(request: web.Request, tools: Any, *, offer_default: bool = True) -> list[McpToolSpec]:
    """The RAG sources of this request (see the module docstring); the first problem is a 400 naming its field."""
    principal = request[PRINCIPAL]
    chosen: dict[str, tuple[rags.Rag, int | None]] = {}
    searches = [
        (i, tool)
        for i, tool in enumerate(tools if isinstance(tools, list) else ())
        if isinstance(tool, dict) and tool.get("type") == "file_search"
    ]
    explicit = bool(searches)
    if explicit:  # a plain request opens no database session here
        async with request.app[DB].read() as session:
            await _choose(session, principal, searches, chosen)
    elif offer_default:
        cap = request.app[SETTINGS].responses_default_rag_tools
        if cap > 0:  # from the short-lived per-process cache: no database read on every request
            for rag in (await request.app[ACCESS].readable_rags(principal))[:cap]:
                chosen[rag.id] = (rag, None)
    return [spec(rag, limit) for rag, limit in chosen.values()]


async def _choose(
    session: AsyncSession,
    principal: Principal,
    searches: list[tuple[int, dict[str, Any]]],
    chosen: dict[str, tuple[rags.Rag, int | None]],
) -> None:
    for i, tool in searches:
        where = f"tools[{i}]"
        _refuse_unsupported(tool, where)
        limit = _max_results(tool, where)
        for rag_id in _ids(tool, where):
            if not await can_invoke(session, principal, ResourceRef(ResourceKind.RAG, rag_id)):
                field = f"{where}.vector_store_ids"
                raise InvalidArgument(
                    f"'{field}': RAG {rag_id!r} does not exist or you do not have access to it.", field=field
                )
            if rag_id not in chosen:
                chosen[rag_id] = (await rags.load(session, rag_id), limit)


def spec(rag: rags.Rag, max_results: int | None, *, delegated: bool = False) -> McpToolSpec:
    """One RAG as a tool source; its label (the model-visible prefix of its tool) is made of its id, unique."""
    source = ToolSource(f"rag_{rag.id}_", rags.rag_url("", rag.id) + "/mcp")
    rag_source = RagSource(rag.id, rag.display_name or rag.name, max_results, delegated)
    return McpToolSpec(source, allowed=None, approval_always=False, rag=rag_source)


class RagConnection:
    """What `server.mcp.tool_client.ToolConnection` is for a remote server, for one in-process RAG source."""

    def __init__(self, request: web.Request, source: RagSource) -> None:
        self._request = request
        self._source = source

    async def list_tools(self) -> list[McpTool]:
        description, schema = await search_tool_schema()
        about = f"Search the knowledge base '{self._source.display_name}'. {description}"
        return [McpTool(SEARCH_TOOL, about, schema)]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name != SEARCH_TOOL:
            return ToolResult(f"Unknown tool {name!r}.", True)
        cap = self._source.max_results
        top_k = arguments.get("top_k", cap or 5)
        if cap is not None and isinstance(top_k, int):
            top_k = min(top_k, cap)
        try:
            found = await search_rag(
                self._request,
                self._source.rag_id,
                str(arguments.get("query", "")),
                int(top_k),
                arguments.get("filters"),
                delegated=self._source.delegated,
            )
        except ToolError as exc:
            return ToolResult(str(exc), True)
        except SwitchboardError as exc:
            raise ToolFailure(exc.message) from None
        return ToolResult(orjson.dumps(found).decode(), False)

    async def close(self) -> None:
        return None


def _attributes(metadata: Any) -> dict[str, str | float | bool]:
    """File metadata as OpenAI's result attributes (scalars only: strings, numbers, booleans)."""
    if not isinstance(metadata, dict):
        return {}
    return {str(k): v for k, v in metadata.items() if isinstance(v, str | int | float | bool)}


def results_of(text: str) -> list[dict[str, Any]]:
    """A search tool result as `file_search_call.results`."""
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError:
        return []
    return [
        {
            "file_id": r.get("file_id"),
            "filename": r.get("filename"),
            "score": r.get("score"),
            "text": r.get("text"),
            "attributes": _attributes(r.get("metadata")),
        }
        for r in (found.get("results") or () if isinstance(found, dict) else ())
        if isinstance(r, dict)
    ]
