from gen.switchboard.limits.v1 import limit_policy_pb2 as _limit_policy_pb2
from gen.switchboard.tenants.v1 import tenant_list_service_pb2 as _tenant_list_service_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SetLimitPolicyRequest(_message.Message):
    __slots__ = ("tenant_id", "tier", "scope", "limits")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    tier: _limit_policy_pb2.LimitTier
    scope: _limit_policy_pb2.LimitScope
    limits: _limit_policy_pb2.Limits
    def __init__(self, tenant_id: _Optional[str] = ..., tier: _Optional[_Union[_limit_policy_pb2.LimitTier, str]] = ..., scope: _Optional[_Union[_limit_policy_pb2.LimitScope, _Mapping]] = ..., limits: _Optional[_Union[_limit_policy_pb2.Limits, _Mapping]] = ...) -> None: ...

class SetLimitPolicyResponse(_message.Message):
    __slots__ = ("policy",)
    POLICY_FIELD_NUMBER: _ClassVar[int]
    policy: _limit_policy_pb2.LimitPolicy
    def __init__(self, policy: _Optional[_Union[_limit_policy_pb2.LimitPolicy, _Mapping]] = ...) -> None: ...

class DeleteLimitPolicyRequest(_message.Message):
    __slots__ = ("tenant_id", "tier", "scope")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    tier: _limit_policy_pb2.LimitTier
    scope: _limit_policy_pb2.LimitScope
    def __init__(self, tenant_id: _Optional[str] = ..., tier: _Optional[_Union[_limit_policy_pb2.LimitTier, str]] = ..., scope: _Optional[_Union[_limit_policy_pb2.LimitScope, _Mapping]] = ...) -> None: ...

class DeleteLimitPolicyResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListLimitPoliciesRequest(_message.Message):
    __slots__ = ("tenant_id", "scope", "page")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    scope: _limit_policy_pb2.LimitScope
    page: _tenant_list_service_pb2.PageRequest
    def __init__(self, tenant_id: _Optional[str] = ..., scope: _Optional[_Union[_limit_policy_pb2.LimitScope, _Mapping]] = ..., page: _Optional[_Union[_tenant_list_service_pb2.PageRequest, _Mapping]] = ...) -> None: ...

class ListLimitPoliciesResponse(_message.Message):
    __slots__ = ("policies", "next_page_token")
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    policies: _containers.RepeatedCompositeFieldContainer[_limit_policy_pb2.LimitPolicy]
    next_page_token: str
    def __init__(self, policies: _Optional[_Iterable[_Union[_limit_policy_pb2.LimitPolicy, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetLimitUsageRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_id", "model", "scope")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_id: str
    model: str
    scope: _limit_policy_pb2.LimitScope
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ..., model: _Optional[str] = ..., scope: _Optional[_Union[_limit_policy_pb2.LimitScope, _Mapping]] = ...) -> None: ...

class GetLimitUsageResponse(_message.Message):
    __slots__ = ("limits",)
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    limits: _containers.RepeatedCompositeFieldContainer[_limit_policy_pb2.LimitUsage]
    def __init__(self, limits: _Optional[_Iterable[_Union[_limit_policy_pb2.LimitUsage, _Mapping]]] = ...) -> None: ...
