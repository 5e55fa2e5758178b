from gen.platform.tenants.v1 import tenant_pb2 as _tenant_pb2
from gen.platform.tenants.v1 import user_pb2 as _user_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetCurrentUserRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetCurrentUserResponse(_message.Message):
    __slots__ = ("user", "can_manage_tenants", "can_manage_models", "memberships", "tenant_id", "api_key_id")
    USER_FIELD_NUMBER: _ClassVar[int]
    CAN_MANAGE_TENANTS_FIELD_NUMBER: _ClassVar[int]
    CAN_MANAGE_MODELS_FIELD_NUMBER: _ClassVar[int]
    MEMBERSHIPS_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    user: _user_pb2.UserMetadata
    can_manage_tenants: bool
    can_manage_models: bool
    memberships: _containers.RepeatedCompositeFieldContainer[_tenant_pb2.TenantMembership]
    tenant_id: str
    api_key_id: str
    def __init__(self, user: _Optional[_Union[_user_pb2.UserMetadata, _Mapping]] = ..., can_manage_tenants: _Optional[bool] = ..., can_manage_models: _Optional[bool] = ..., memberships: _Optional[_Iterable[_Union[_tenant_pb2.TenantMembership, _Mapping]]] = ..., tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ...) -> None: ...

class DeleteUserRequest(_message.Message):
    __slots__ = ("user_id",)
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    def __init__(self, user_id: _Optional[str] = ...) -> None: ...

class DeleteUserResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
