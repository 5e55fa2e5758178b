"""platform.ragmanager.v1 messages <-> the RAG domain's values, nothing else."""

from __future__ import annotations

from gen.platform.ragmanager.v1 import rag_pb2 as pb
from server.domain.rags import Rag, RagSpec, rag_url
from server.services.modelmanager.convert import sharing, sharing_in
from server.services.tenants.convert import timestamp

__all__ = ["rag", "rag_spec"]


def _opt(message: object, field: str) -> object | None:
    return getattr(message, field) if message is not None and message.HasField(field) else None  # type: ignore[attr-defined]


def rag_spec(value: pb.Rag | None, *, clear_score_threshold: bool = False) -> RagSpec:
    value = value or pb.Rag()
    chunking = value.chunking
    retrieval = value.retrieval
    return RagSpec(
        id=value.id,
        name=value.name,
        display_name=value.display_name,
        embedding_model=value.embedding_model,
        chunk_size_tokens=_opt(chunking, "chunk_size_tokens"),  # type: ignore[arg-type]
        chunk_overlap_tokens=_opt(chunking, "chunk_overlap_tokens"),  # type: ignore[arg-type]
        rerank_model=_opt(value, "rerank_model"),  # type: ignore[arg-type]
        top_k=_opt(retrieval, "top_k"),  # type: ignore[arg-type]
        score_threshold=_opt(retrieval, "score_threshold"),  # type: ignore[arg-type]
        clear_score_threshold=clear_score_threshold,
        dense_weight=_opt(retrieval, "dense_weight"),  # type: ignore[arg-type]
        lexical_weight=_opt(retrieval, "lexical_weight"),  # type: ignore[arg-type]
        sharing=sharing_in(value.sharing) if value.HasField("sharing") else None,
    )


def rag(value: Rag, public_base_url: str) -> pb.Rag:
    return pb.Rag(
        id=value.id,
        name=value.name,
        display_name=value.display_name,
        tenant_id=value.tenant_id or "",
        sharing=sharing(value.sharing),
        embedding_model=value.embedding_model,
        embedding_dimensions=value.embedding_dimensions,
        chunking=pb.RagChunking(
            chunk_size_tokens=value.chunk_size_tokens, chunk_overlap_tokens=value.chunk_overlap_tokens
        ),
        rerank_model=value.rerank_model,
        retrieval=pb.RagRetrievalDefaults(
            top_k=value.top_k,
            score_threshold=value.score_threshold,
            dense_weight=value.dense_weight,
            lexical_weight=value.lexical_weight,
        ),
        rag_url=rag_url(public_base_url, value.id),
        create_time=timestamp(value.created_at),
        update_time=timestamp(value.updated_at),
        used_bytes=value.used_bytes,
    )
