"""The per-RAG HTTP APIs at {rag_url} = {gateway}/rag/{id}: files, content (deprecated), scraper uploads, context."""

from gateway.rag.routes import routes

__all__ = ["routes"]
