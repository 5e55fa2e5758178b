"""Model-visible MCP tool names: `{server}{tool}`, in the model's alphabet, deterministic and reversible."""

from __future__ import annotations

import re

from server.mcp.toolnames import MAX_LENGTH, ToolNames, model_name

MODEL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def test_plain_names_are_the_spec_join() -> None:
    assert model_name("github_", "create_issue") == "github_create_issue"


def test_dots_and_other_characters_are_replaced() -> None:
    assert model_name("jira.", "issues.search") == "jira_issues_search"


def test_long_names_are_shortened_with_a_stable_hash() -> None:
    long_tool = "t" * 120
    first, second = model_name("srv_", long_tool), model_name("srv_", long_tool)
    assert first == second and len(first) == MAX_LENGTH and MODEL_NAME.fullmatch(first)
    assert model_name("srv_", long_tool + "x") != first


def test_collisions_get_distinct_names_and_resolve_back() -> None:
    names = ToolNames()
    a = names.add("a.", "b")  # a_b
    b = names.add("a_", "b")  # a_b too, before disambiguation
    assert a != b and all(MODEL_NAME.fullmatch(n) for n in (a, b))
    assert names.resolve(a) == ("a.", "b") and names.resolve(b) == ("a_", "b")
    assert names.add("a.", "b") == a  # the same tool keeps its name
    assert names.resolve("unknown") is None
