"""Reading /metrics in tests: fetch over a fresh connection, parse with prometheus-client's own text parser."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Scrape", "scrape"]


@dataclass
class Scrape:
    text: str
    samples: list[tuple[str, dict[str, str], float]]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the samples named `name` whose labels include `labels` (0 when there are none)."""
        return sum(v for n, lbls, v in self.samples if n == name and labels.items() <= lbls.items())

    def label_values(self, name: str, label: str) -> set[str]:
        return {lbls[label] for n, lbls, _ in self.samples if n == name and label in lbls}


async def scrape(base_url: str, token: str | None = None) -> Scrape:
    """GET base_url/metrics on a new connection (with several workers, the kernel picks which one answers)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    connector = aiohttp.TCPConnector(force_close=True)
    async with (
        aiohttp.ClientSession(connector=connector) as http,
        http.get(f"{base_url}/metrics", headers=headers) as r,
    ):
        assert r.status == 200, await r.text()
        assert r.headers["Content-Type"].startswith("text/plain; version=")
        text = await r.text()
    samples = [
        (sample.name, dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]
    return Scrape(text, samples)
