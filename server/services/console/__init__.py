"""Handlers of our own additive package switchboard.console.v1 (what the web console asks about its caller)."""
