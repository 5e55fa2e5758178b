"""Handlers for platform.platform.v1."""
