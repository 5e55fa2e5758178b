"""Handlers of platform.agents.v1."""
