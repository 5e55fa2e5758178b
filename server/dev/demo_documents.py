"""The few short documents the demo's RAG (`demo-handbook`) is seeded with: a small Switchboard handbook, so a
file_search over it answers questions about the platform the newcomer is trying."""

from __future__ import annotations

__all__ = ["DEMO_DOCUMENTS"]

DEMO_DOCUMENTS: tuple[tuple[str, str], ...] = (
    (
        "api-keys.md",
        "# Rotating an API key\n\n"
        "To rotate an API key, create a new key with the same grants, move your application to the new secret, "
        "then revoke the old key. Revocation is final. Disabling a key instead keeps its secret and grants, so it "
        "can be enabled again later.",
    ),
    (
        "preset-agents.md",
        "# Preset agents\n\n"
        "A preset agent bundles a base model, instructions, default tools (MCP servers and RAGs) and up to four "
        "output guardrails. Applications call it like a model, through its public model id. A guardrail checks the "
        "final answer and withholds it when it refuses.",
    ),
    (
        "mcp-tools.md",
        "# MCP tools\n\n"
        "Tools reach models over MCP. Register an MCP server once, grant it to a key, and the Responses endpoint "
        "runs the tool loop: it lists the server's tools, calls the ones the model asks for and gives the results "
        "back to the model until it answers.",
    ),
    (
        "office-hours.md",
        "# Platform team office hours\n\n"
        "The platform team holds office hours every Tuesday from 14:00 to 15:00 UTC in the #switchboard channel. "
        "Bring questions about quotas, keys and model access.",
    ),
)
