"""platform.ragmanager.v1 handlers."""
