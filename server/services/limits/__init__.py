"""switchboard.limits.v1 handlers."""
