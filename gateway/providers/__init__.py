"""One translator per provider kind: where a surface's request goes upstream, with which credentials and body."""

from __future__ import annotations

from gateway.catalog import Provider
from gateway.providers.base import (
    Surface,
    Translator,
    UpstreamSessions,
    invalid_answer,
    open_upstream,
    read_answer,
)
from gateway.providers.compatible import CompatibleTranslator
from gateway.providers.vendor_a import VendorATranslator
from gateway.providers.vendor_b import VendorBTranslator
from server.settings import Settings

__all__ = [
    "Surface",
    "Translator",
    "UpstreamSessions",
    "invalid_answer",
    "open_upstream",
    "read_answer",
    "translators",
]


def translators(settings: Settings) -> dict[Provider, Translator]:
    compatible = CompatibleTranslator()
    return {
        Provider.IN_CLUSTER: compatible,
        Provider.CUSTOM_COMPATIBLE: compatible,
        Provider.VENDOR_A: VendorATranslator(settings.vendor_a_base_url),
        Provider.VENDOR_B: VendorBTranslator(),
    }
