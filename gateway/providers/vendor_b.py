"""VENDOR_B: Azure-style. `{baseUrl}/openai/deployments/{providerModelId}/{surface}?api-version={apiVersion}` with
the key in an `api-key` header; the deployment in the path chooses the model, so the body carries none."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from gateway.catalog import Route
from gateway.providers.base import Surface
from server.errors import InvalidArgument

__all__ = ["VendorBTranslator"]


class VendorBTranslator:
    def url(self, route: Route, surface: Surface) -> str:
        if surface == Surface.RERANK:
            raise InvalidArgument(f"The model '{route.public_model_id}' does not support rerank.", field="model")
        deployment = quote(route.upstream_model_id, safe="")
        query = urlencode({"api-version": route.api_version}) if route.api_version else ""
        url = f"{route.base_url.rstrip('/')}/openai/deployments/{deployment}/{surface.value}"
        return f"{url}?{query}" if query else url

    def headers(self, route: Route) -> dict[str, str]:
        key = route.api_key.reveal()
        return {"api-key": key} if key else {}

    def body(self, route: Route, payload: dict[str, Any]) -> dict[str, Any]:
        payload.pop("model", None)
        return payload

    def form_model(self, route: Route) -> str | None:
        return None
