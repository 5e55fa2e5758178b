"""Fake model providers: small aiohttp apps on loopback that speak a provider's wire format and record requests."""
