import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from gen.platform.metering.v1 import usage_pb2 as _usage_pb2
from gen.switchboard.capture.v1 import capture_pb2 as _capture_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SetCapturePolicyRequest(_message.Message):
    __slots__ = ("tenant_id", "scope", "enabled")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    scope: _capture_pb2.CaptureScope
    enabled: bool
    def __init__(self, tenant_id: _Optional[str] = ..., scope: _Optional[_Union[_capture_pb2.CaptureScope, _Mapping]] = ..., enabled: _Optional[bool] = ...) -> None: ...

class SetCapturePolicyResponse(_message.Message):
    __slots__ = ("policy",)
    POLICY_FIELD_NUMBER: _ClassVar[int]
    policy: _capture_pb2.CapturePolicy
    def __init__(self, policy: _Optional[_Union[_capture_pb2.CapturePolicy, _Mapping]] = ...) -> None: ...

class GetCapturePolicyRequest(_message.Message):
    __slots__ = ("tenant_id", "scope")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    scope: _capture_pb2.CaptureScope
    def __init__(self, tenant_id: _Optional[str] = ..., scope: _Optional[_Union[_capture_pb2.CaptureScope, _Mapping]] = ...) -> None: ...

class GetCapturePolicyResponse(_message.Message):
    __slots__ = ("policy", "capturing")
    POLICY_FIELD_NUMBER: _ClassVar[int]
    CAPTURING_FIELD_NUMBER: _ClassVar[int]
    policy: _capture_pb2.CapturePolicy
    capturing: bool
    def __init__(self, policy: _Optional[_Union[_capture_pb2.CapturePolicy, _Mapping]] = ..., capturing: _Optional[bool] = ...) -> None: ...

class ListCapturePoliciesRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class ListCapturePoliciesResponse(_message.Message):
    __slots__ = ("policies",)
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    policies: _containers.RepeatedCompositeFieldContainer[_capture_pb2.CapturePolicy]
    def __init__(self, policies: _Optional[_Iterable[_Union[_capture_pb2.CapturePolicy, _Mapping]]] = ...) -> None: ...

class GrantCaptureAccessRequest(_message.Message):
    __slots__ = ("tenant_id", "user_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    user_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class GrantCaptureAccessResponse(_message.Message):
    __slots__ = ("grant",)
    GRANT_FIELD_NUMBER: _ClassVar[int]
    grant: _capture_pb2.CaptureGrant
    def __init__(self, grant: _Optional[_Union[_capture_pb2.CaptureGrant, _Mapping]] = ...) -> None: ...

class RevokeCaptureAccessRequest(_message.Message):
    __slots__ = ("tenant_id", "user_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    user_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class RevokeCaptureAccessResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListCaptureAccessRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class ListCaptureAccessResponse(_message.Message):
    __slots__ = ("grants",)
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    grants: _containers.RepeatedCompositeFieldContainer[_capture_pb2.CaptureGrant]
    def __init__(self, grants: _Optional[_Iterable[_Union[_capture_pb2.CaptureGrant, _Mapping]]] = ...) -> None: ...

class ListCapturedExchangesRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_id", "service_account_id", "user_id", "model", "call_kind", "start_time", "end_time", "page_size", "page_token")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CALL_KIND_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_id: str
    service_account_id: str
    user_id: str
    model: str
    call_kind: _usage_pb2.CallKind
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    page_size: int
    page_token: str
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ..., service_account_id: _Optional[str] = ..., user_id: _Optional[str] = ..., model: _Optional[str] = ..., call_kind: _Optional[_Union[_usage_pb2.CallKind, str]] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListCapturedExchangesResponse(_message.Message):
    __slots__ = ("exchanges", "next_page_token")
    EXCHANGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    exchanges: _containers.RepeatedCompositeFieldContainer[_capture_pb2.CapturedExchange]
    next_page_token: str
    def __init__(self, exchanges: _Optional[_Iterable[_Union[_capture_pb2.CapturedExchange, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetCapturedExchangeRequest(_message.Message):
    __slots__ = ("tenant_id", "id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    id: str
    def __init__(self, tenant_id: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class GetCapturedExchangeResponse(_message.Message):
    __slots__ = ("exchange", "usage", "request_body", "response_body")
    EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_BODY_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_BODY_FIELD_NUMBER: _ClassVar[int]
    exchange: _capture_pb2.CapturedExchange
    usage: _capture_pb2.CapturedUsage
    request_body: str
    response_body: str
    def __init__(self, exchange: _Optional[_Union[_capture_pb2.CapturedExchange, _Mapping]] = ..., usage: _Optional[_Union[_capture_pb2.CapturedUsage, _Mapping]] = ..., request_body: _Optional[str] = ..., response_body: _Optional[str] = ...) -> None: ...
