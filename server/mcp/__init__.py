"""Outbound MCP: talking to registered MCP servers and their OAuth authorization servers (through the egress guard)."""
