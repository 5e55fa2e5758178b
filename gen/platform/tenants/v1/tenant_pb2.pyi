import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from gen.platform.tenants.v1 import user_pb2 as _user_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TenantRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TENANT_ROLE_UNSPECIFIED: _ClassVar[TenantRole]
    TENANT_ROLE_MEMBER: _ClassVar[TenantRole]
    TENANT_ROLE_EDITOR: _ClassVar[TenantRole]
    TENANT_ROLE_ADMIN: _ClassVar[TenantRole]
TENANT_ROLE_UNSPECIFIED: TenantRole
TENANT_ROLE_MEMBER: TenantRole
TENANT_ROLE_EDITOR: TenantRole
TENANT_ROLE_ADMIN: TenantRole

class Tenant(_message.Message):
    __slots__ = ("id", "name", "display_name", "create_time")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    display_name: str
    create_time: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., display_name: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TenantMember(_message.Message):
    __slots__ = ("user_id", "role", "metadata", "pending", "email")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    role: TenantRole
    metadata: _user_pb2.UserMetadata
    pending: bool
    email: str
    def __init__(self, user_id: _Optional[str] = ..., role: _Optional[_Union[TenantRole, str]] = ..., metadata: _Optional[_Union[_user_pb2.UserMetadata, _Mapping]] = ..., pending: _Optional[bool] = ..., email: _Optional[str] = ...) -> None: ...

class TenantMembership(_message.Message):
    __slots__ = ("tenant_id", "tenant_name", "role")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    tenant_name: str
    role: TenantRole
    def __init__(self, tenant_id: _Optional[str] = ..., tenant_name: _Optional[str] = ..., role: _Optional[_Union[TenantRole, str]] = ...) -> None: ...
