"""OAuth 2.0 client authentication with HTTP Basic (`client_secret_basic`, RFC 6749 section 2.3.1), for every token
endpoint we call (MCP servers' authorization servers, the console's OpenID provider)."""

from __future__ import annotations

from urllib.parse import quote

import aiohttp

__all__ = ["client_secret_basic"]


def client_secret_basic(client_id: str, client_secret: str) -> aiohttp.BasicAuth:
    """Both parts form-urlencoded first, as the RFC says: a ':' in a URL-shaped client id would otherwise end the
    user-id (aiohttp refuses one), and a '%' or '+' in a secret would decode to something else. A space becomes %20,
    not '+': the same to a form decoder, and also to servers that only percent-decode (the mcp SDK's among them)."""
    return aiohttp.BasicAuth(quote(client_id, safe=""), quote(client_secret, safe=""))
