import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from gen.platform.metering.v1 import usage_pb2 as _usage_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CaptureScopeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CAPTURE_SCOPE_KIND_UNSPECIFIED: _ClassVar[CaptureScopeKind]
    CAPTURE_SCOPE_KIND_TENANT: _ClassVar[CaptureScopeKind]
    CAPTURE_SCOPE_KIND_SERVICE_ACCOUNT: _ClassVar[CaptureScopeKind]
    CAPTURE_SCOPE_KIND_API_KEY: _ClassVar[CaptureScopeKind]
CAPTURE_SCOPE_KIND_UNSPECIFIED: CaptureScopeKind
CAPTURE_SCOPE_KIND_TENANT: CaptureScopeKind
CAPTURE_SCOPE_KIND_SERVICE_ACCOUNT: CaptureScopeKind
CAPTURE_SCOPE_KIND_API_KEY: CaptureScopeKind

class CaptureScope(_message.Message):
    __slots__ = ("kind", "id")
    KIND_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    kind: CaptureScopeKind
    id: str
    def __init__(self, kind: _Optional[_Union[CaptureScopeKind, str]] = ..., id: _Optional[str] = ...) -> None: ...

class CapturePolicy(_message.Message):
    __slots__ = ("tenant_id", "scope", "enabled", "update_time", "updated_by")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATED_BY_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    scope: CaptureScope
    enabled: bool
    update_time: _timestamp_pb2.Timestamp
    updated_by: str
    def __init__(self, tenant_id: _Optional[str] = ..., scope: _Optional[_Union[CaptureScope, _Mapping]] = ..., enabled: _Optional[bool] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_by: _Optional[str] = ...) -> None: ...

class CaptureGrant(_message.Message):
    __slots__ = ("tenant_id", "user_id", "grant_time", "granted_by")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    GRANT_TIME_FIELD_NUMBER: _ClassVar[int]
    GRANTED_BY_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    user_id: str
    grant_time: _timestamp_pb2.Timestamp
    granted_by: str
    def __init__(self, tenant_id: _Optional[str] = ..., user_id: _Optional[str] = ..., grant_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., granted_by: _Optional[str] = ...) -> None: ...

class CapturedExchange(_message.Message):
    __slots__ = ("id", "time", "tenant_id", "api_key_id", "service_account_id", "user_id", "model", "call_kind", "status", "request_bytes", "response_bytes", "request_truncated", "response_truncated")
    ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CALL_KIND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_BYTES_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_BYTES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    id: str
    time: _timestamp_pb2.Timestamp
    tenant_id: str
    api_key_id: str
    service_account_id: str
    user_id: str
    model: str
    call_kind: _usage_pb2.CallKind
    status: int
    request_bytes: int
    response_bytes: int
    request_truncated: bool
    response_truncated: bool
    def __init__(self, id: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ..., service_account_id: _Optional[str] = ..., user_id: _Optional[str] = ..., model: _Optional[str] = ..., call_kind: _Optional[_Union[_usage_pb2.CallKind, str]] = ..., status: _Optional[int] = ..., request_bytes: _Optional[int] = ..., response_bytes: _Optional[int] = ..., request_truncated: _Optional[bool] = ..., response_truncated: _Optional[bool] = ...) -> None: ...

class CapturedUsage(_message.Message):
    __slots__ = ("usage_event_id", "prompt_tokens", "completion_tokens", "total_tokens", "latency_ms")
    USAGE_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    usage_event_id: int
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    latency_ms: float
    def __init__(self, usage_event_id: _Optional[int] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ..., latency_ms: _Optional[float] = ...) -> None: ...
