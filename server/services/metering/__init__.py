"""Handlers of platform.metering.v1."""
