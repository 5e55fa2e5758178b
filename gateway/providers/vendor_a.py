"""VENDOR_A: a hosted OpenAI-style provider. Its base URL is platform configuration (SWITCHBOARD_VENDOR_A_BASE_URL),
not per model; the model's API key goes in `Authorization: Bearer`."""

from __future__ import annotations

from gateway.catalog import Route
from gateway.providers.compatible import CompatibleTranslator

__all__ = ["VendorATranslator"]


class VendorATranslator(CompatibleTranslator):
    def __init__(self, base_url: str) -> None:
        self._base_url = base_url

    def base_url(self, route: Route) -> str:
        return self._base_url
