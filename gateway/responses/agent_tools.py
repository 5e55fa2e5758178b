"""A preset agent's default tools in the Responses loop: its registered MCP servers and its RAGs, first, then the
caller's own tools.

They are used on the agent's authority, like its base model: whoever saved the agent had to be able to use each one
(server.domain.preset_agents), and the caller needs only the right to invoke the agent. The agent's tools run without
approval requests (their choice was the agent's administrator's). A caller's own `mcp` tool naming one of them (to
pass a per-user OAuth token, say) or a `file_search` tool selecting one of its RAGs takes its place. A default tool
that no longer exists, or an MCP server that needs a per-user token the caller did not pass, fails the call
(failed_precondition) rather than running the agent without it.
"""

from __future__ import annotations

from aiohttp import web

from gateway.agents import AgentRoute
from gateway.context import DB, PRINCIPAL
from gateway.responses import rag_tools
from gateway.responses.mcp_tools import MCP_RUNTIME, McpToolSpec
from server.domain import mcp_servers, rags
from server.errors import FailedPrecondition, InvalidArgument, NotFound
from server.mcp.tool_client import ToolSource

__all__ = ["with_agent_tools"]


def _cannot_run(agent: AgentRoute, why: str) -> FailedPrecondition:
    return FailedPrecondition(f"The preset agent '{agent.public_model_id}' cannot run: {why}.", field="model")


async def with_agent_tools(request: web.Request, agent: AgentRoute, caller: list[McpToolSpec]) -> list[McpToolSpec]:
    labels = {s.source.label for s in caller}
    selected = {s.rag.rag_id for s in caller if s.rag is not None}
    box = request.app[MCP_RUNTIME].box
    own: list[McpToolSpec] = []
    async with request.app[DB].read() as session:
        for name in agent.plan.default_mcp_servers:
            if name in labels:
                continue
            try:
                server = await mcp_servers.invocation(
                    session, request[PRINCIPAL], name, box, field="model", delegated=agent.plan.pins
                )
            except InvalidArgument:
                raise _cannot_run(agent, f"its MCP server {name!r} no longer exists") from None
            if server.user_auth_required:
                raise _cannot_run(
                    agent,
                    f"its MCP server {name!r} needs the user's own OAuth token; pass it in an 'mcp' tool with"
                    f" server_label {name!r} and 'authorization'",
                )
            source = ToolSource(name, server.server_url, dict(server.headers))
            own.append(McpToolSpec(source, allowed=None, approval_always=False))
        for rag_id in agent.plan.default_rags:
            if rag_id in selected:
                continue
            try:
                rag = await rags.load(session, rag_id)
            except NotFound:
                raise _cannot_run(agent, f"its RAG {rag_id!r} no longer exists") from None
            own.append(rag_tools.spec(rag, None, delegated=True))
    return own + caller
