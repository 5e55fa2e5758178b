"""Handlers of platform.conversations.v1."""
