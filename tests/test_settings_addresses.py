"""Where clients are told the gateway is (each RAG's ragUrl, the console's chat) when SWITCHBOARD_GATEWAY_PUBLIC_URL
is unset: where the gateway listens, not a fixed port."""

from __future__ import annotations

import pytest

from server.settings import load_settings


@pytest.mark.parametrize(
    ("env", "url"),
    [
        ({}, "http://127.0.0.1:8081"),
        ({"SWITCHBOARD_GATEWAY_PORT": "28081"}, "http://127.0.0.1:28081"),  # was :8081 whatever the port
        ({"SWITCHBOARD_GATEWAY_HOST": "0.0.0.0", "SWITCHBOARD_GATEWAY_PORT": "9000"}, "http://127.0.0.1:9000"),  # noqa: S104
        ({"SWITCHBOARD_GATEWAY_HOST": "::1"}, "http://[::1]:8081"),
        ({"SWITCHBOARD_GATEWAY_HOST": "gw.internal"}, "http://gw.internal:8081"),
        (
            {"SWITCHBOARD_GATEWAY_PORT": "28081", "SWITCHBOARD_GATEWAY_PUBLIC_URL": "https://ai.example/"},
            "https://ai.example",
        ),
    ],
)
def test_the_gateway_s_public_url_defaults_to_where_it_listens(env: dict[str, str], url: str) -> None:
    assert load_settings(env).gateway_public_url == url
