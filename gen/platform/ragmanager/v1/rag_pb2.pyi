import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from gen.platform.modelmanager.v1 import sharing_pb2 as _sharing_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Rag(_message.Message):
    __slots__ = ("id", "name", "display_name", "tenant_id", "sharing", "embedding_model", "embedding_dimensions", "chunking", "rerank_model", "retrieval", "rag_url", "create_time", "update_time", "used_bytes")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SHARING_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    CHUNKING_FIELD_NUMBER: _ClassVar[int]
    RERANK_MODEL_FIELD_NUMBER: _ClassVar[int]
    RETRIEVAL_FIELD_NUMBER: _ClassVar[int]
    RAG_URL_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    display_name: str
    tenant_id: str
    sharing: _sharing_pb2.Sharing
    embedding_model: str
    embedding_dimensions: int
    chunking: RagChunking
    rerank_model: str
    retrieval: RagRetrievalDefaults
    rag_url: str
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    used_bytes: int
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., display_name: _Optional[str] = ..., tenant_id: _Optional[str] = ..., sharing: _Optional[_Union[_sharing_pb2.Sharing, _Mapping]] = ..., embedding_model: _Optional[str] = ..., embedding_dimensions: _Optional[int] = ..., chunking: _Optional[_Union[RagChunking, _Mapping]] = ..., rerank_model: _Optional[str] = ..., retrieval: _Optional[_Union[RagRetrievalDefaults, _Mapping]] = ..., rag_url: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., used_bytes: _Optional[int] = ...) -> None: ...

class RagChunking(_message.Message):
    __slots__ = ("chunk_size_tokens", "chunk_overlap_tokens")
    CHUNK_SIZE_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_OVERLAP_TOKENS_FIELD_NUMBER: _ClassVar[int]
    chunk_size_tokens: int
    chunk_overlap_tokens: int
    def __init__(self, chunk_size_tokens: _Optional[int] = ..., chunk_overlap_tokens: _Optional[int] = ...) -> None: ...

class RagRetrievalDefaults(_message.Message):
    __slots__ = ("top_k", "score_threshold", "dense_weight", "lexical_weight")
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    SCORE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    DENSE_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    top_k: int
    score_threshold: float
    dense_weight: float
    lexical_weight: float
    def __init__(self, top_k: _Optional[int] = ..., score_threshold: _Optional[float] = ..., dense_weight: _Optional[float] = ..., lexical_weight: _Optional[float] = ...) -> None: ...
