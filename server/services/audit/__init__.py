"""Handlers of our own additive package switchboard.audit.v1."""
