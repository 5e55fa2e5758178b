"""The OpenAI-compatible model gateway: an aiohttp sidecar serving /v1 (`python -m gateway`)."""
