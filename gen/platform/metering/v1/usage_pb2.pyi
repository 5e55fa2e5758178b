import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TokenUsageGroupBy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOKEN_USAGE_GROUP_BY_UNSPECIFIED: _ClassVar[TokenUsageGroupBy]
    TOKEN_USAGE_GROUP_BY_NONE: _ClassVar[TokenUsageGroupBy]
    TOKEN_USAGE_GROUP_BY_TENANT: _ClassVar[TokenUsageGroupBy]
    TOKEN_USAGE_GROUP_BY_MODEL: _ClassVar[TokenUsageGroupBy]
    TOKEN_USAGE_GROUP_BY_API_KEY: _ClassVar[TokenUsageGroupBy]

class CallGroupBy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CALL_GROUP_BY_UNSPECIFIED: _ClassVar[CallGroupBy]
    CALL_GROUP_BY_NONE: _ClassVar[CallGroupBy]
    CALL_GROUP_BY_TENANT: _ClassVar[CallGroupBy]
    CALL_GROUP_BY_MODEL: _ClassVar[CallGroupBy]
    CALL_GROUP_BY_API_KEY: _ClassVar[CallGroupBy]

class CallKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CALL_KIND_UNSPECIFIED: _ClassVar[CallKind]
    CALL_KIND_CHAT_COMPLETION: _ClassVar[CallKind]
    CALL_KIND_RESPONSE: _ClassVar[CallKind]
    CALL_KIND_EMBEDDING: _ClassVar[CallKind]
    CALL_KIND_RERANK: _ClassVar[CallKind]
    CALL_KIND_TRANSCRIPTION: _ClassVar[CallKind]
    CALL_KIND_MCP_TOOL_CALL: _ClassVar[CallKind]
    CALL_KIND_RAG_CONTEXT: _ClassVar[CallKind]
TOKEN_USAGE_GROUP_BY_UNSPECIFIED: TokenUsageGroupBy
TOKEN_USAGE_GROUP_BY_NONE: TokenUsageGroupBy
TOKEN_USAGE_GROUP_BY_TENANT: TokenUsageGroupBy
TOKEN_USAGE_GROUP_BY_MODEL: TokenUsageGroupBy
TOKEN_USAGE_GROUP_BY_API_KEY: TokenUsageGroupBy
CALL_GROUP_BY_UNSPECIFIED: CallGroupBy
CALL_GROUP_BY_NONE: CallGroupBy
CALL_GROUP_BY_TENANT: CallGroupBy
CALL_GROUP_BY_MODEL: CallGroupBy
CALL_GROUP_BY_API_KEY: CallGroupBy
CALL_KIND_UNSPECIFIED: CallKind
CALL_KIND_CHAT_COMPLETION: CallKind
CALL_KIND_RESPONSE: CallKind
CALL_KIND_EMBEDDING: CallKind
CALL_KIND_RERANK: CallKind
CALL_KIND_TRANSCRIPTION: CallKind
CALL_KIND_MCP_TOOL_CALL: CallKind
CALL_KIND_RAG_CONTEXT: CallKind

class TimeWindow(_message.Message):
    __slots__ = ("start_time", "end_time")
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    def __init__(self, start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TokenUsagePoint(_message.Message):
    __slots__ = ("window", "prompt_tokens", "completion_tokens", "embedding_tokens", "rerank_tokens", "total_tokens")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_TOKENS_FIELD_NUMBER: _ClassVar[int]
    RERANK_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    window: TimeWindow
    prompt_tokens: int
    completion_tokens: int
    embedding_tokens: int
    rerank_tokens: int
    total_tokens: int
    def __init__(self, window: _Optional[_Union[TimeWindow, _Mapping]] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., embedding_tokens: _Optional[int] = ..., rerank_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ...) -> None: ...

class TokenUsageSeries(_message.Message):
    __slots__ = ("tenant_id", "model_id", "points")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    model_id: str
    points: _containers.RepeatedCompositeFieldContainer[TokenUsagePoint]
    def __init__(self, tenant_id: _Optional[str] = ..., model_id: _Optional[str] = ..., points: _Optional[_Iterable[_Union[TokenUsagePoint, _Mapping]]] = ...) -> None: ...

class CallCountPoint(_message.Message):
    __slots__ = ("window", "count")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    window: TimeWindow
    count: int
    def __init__(self, window: _Optional[_Union[TimeWindow, _Mapping]] = ..., count: _Optional[int] = ...) -> None: ...

class CallCountSeries(_message.Message):
    __slots__ = ("tenant_id", "resource_id", "kind", "points")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    resource_id: str
    kind: CallKind
    points: _containers.RepeatedCompositeFieldContainer[CallCountPoint]
    def __init__(self, tenant_id: _Optional[str] = ..., resource_id: _Optional[str] = ..., kind: _Optional[_Union[CallKind, str]] = ..., points: _Optional[_Iterable[_Union[CallCountPoint, _Mapping]]] = ...) -> None: ...

class TokenUsageGroup(_message.Message):
    __slots__ = ("tenant_id", "model_id", "prompt_tokens", "completion_tokens", "embedding_tokens", "rerank_tokens", "total_tokens")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_TOKENS_FIELD_NUMBER: _ClassVar[int]
    RERANK_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    model_id: str
    prompt_tokens: int
    completion_tokens: int
    embedding_tokens: int
    rerank_tokens: int
    total_tokens: int
    def __init__(self, tenant_id: _Optional[str] = ..., model_id: _Optional[str] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., embedding_tokens: _Optional[int] = ..., rerank_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ...) -> None: ...

class ApiTrafficPoint(_message.Message):
    __slots__ = ("window", "request_count", "error_count", "request_bytes", "response_bytes")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    REQUEST_COUNT_FIELD_NUMBER: _ClassVar[int]
    ERROR_COUNT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_BYTES_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_BYTES_FIELD_NUMBER: _ClassVar[int]
    window: TimeWindow
    request_count: int
    error_count: int
    request_bytes: int
    response_bytes: int
    def __init__(self, window: _Optional[_Union[TimeWindow, _Mapping]] = ..., request_count: _Optional[int] = ..., error_count: _Optional[int] = ..., request_bytes: _Optional[int] = ..., response_bytes: _Optional[int] = ...) -> None: ...

class ApiTrafficSeries(_message.Message):
    __slots__ = ("service", "points")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    service: str
    points: _containers.RepeatedCompositeFieldContainer[ApiTrafficPoint]
    def __init__(self, service: _Optional[str] = ..., points: _Optional[_Iterable[_Union[ApiTrafficPoint, _Mapping]]] = ...) -> None: ...
