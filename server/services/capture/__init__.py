"""Handlers of our own additive package switchboard.capture.v1."""
