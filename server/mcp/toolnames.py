"""Model-visible names for MCP tools, and the way back.

The spec forms each tool's name as `{serverName}{tool}`. Models take function names of at most 64 characters from
`[A-Za-z0-9_-]`, while MCP allows `.` and 128 characters, so a joined name may need sanitising and shortening.
`ToolNames` does it deterministically (the same tools always get the same names, so conversations stay valid
across turns) and keeps the reverse map a tool call needs; names that would collide get a short hash suffix.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

__all__ = ["MAX_LENGTH", "ToolNames", "model_name"]

MAX_LENGTH = 64
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def model_name(server: str, tool: str) -> str:
    """`{server}{tool}` in the model's alphabet and length; a shortened name ends in a hash of the full one."""
    joined = f"{server}{tool}"
    clean = _NOT_ALLOWED.sub("_", joined)
    if len(clean) <= MAX_LENGTH:
        return clean
    return f"{clean[: MAX_LENGTH - 9]}_{_digest(joined)}"


@dataclass
class ToolNames:
    """Names for one request's tools: model name -> (server, tool), unique within the request."""

    _back: dict[str, tuple[str, str]] = field(default_factory=dict)

    def add(self, server: str, tool: str) -> str:
        plain = name = model_name(server, tool)
        tries = 0
        # A suffixed name can itself be taken (a server may list a tool named like another's suffixed name): the
        # next suffix then, until one is free, or two tools would share a name and a call reach the wrong one.
        while (taken := self._back.get(name)) is not None and taken != (server, tool):
            salt = server + chr(0) + tool + (chr(0) + str(tries) if tries else "")
            name = f"{plain[: MAX_LENGTH - 9]}_{_digest(salt)}"
            tries += 1
        self._back[name] = (server, tool)
        return name

    def resolve(self, name: str) -> tuple[str, str] | None:
        """(server, tool) for a name the model called, or None when it is not one of ours."""
        return self._back.get(name)
