"""OpenAI-compatible upstreams: CUSTOM_COMPATIBLE base URLs and in-cluster deployments (their endpoint_url).

The base URL is an OpenAI-style base (e.g. `http://vllm:8000/v1`); surfaces are appended to it, and the key, when
there is one, goes in `Authorization: Bearer`.
"""

from __future__ import annotations

from typing import Any

from gateway.catalog import Route
from gateway.providers.base import Surface

__all__ = ["CompatibleTranslator"]


class CompatibleTranslator:
    def base_url(self, route: Route) -> str:
        return route.base_url

    def url(self, route: Route, surface: Surface) -> str:
        return f"{self.base_url(route).rstrip('/')}/{surface.value}"

    def headers(self, route: Route) -> dict[str, str]:
        key = route.api_key.reveal()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def body(self, route: Route, payload: dict[str, Any]) -> dict[str, Any]:
        payload["model"] = route.upstream_model_id
        return payload

    def form_model(self, route: Route) -> str | None:
        return route.upstream_model_id
