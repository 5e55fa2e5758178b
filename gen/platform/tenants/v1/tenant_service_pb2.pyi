from gen.platform.tenants.v1 import tenant_pb2 as _tenant_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateTenantRequest(_message.Message):
    __slots__ = ("name", "display_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    display_name: str
    def __init__(self, name: _Optional[str] = ..., display_name: _Optional[str] = ...) -> None: ...

class CreateTenantResponse(_message.Message):
    __slots__ = ("tenant",)
    TENANT_FIELD_NUMBER: _ClassVar[int]
    tenant: _tenant_pb2.Tenant
    def __init__(self, tenant: _Optional[_Union[_tenant_pb2.Tenant, _Mapping]] = ...) -> None: ...

class GetTenantRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class GetTenantResponse(_message.Message):
    __slots__ = ("tenant",)
    TENANT_FIELD_NUMBER: _ClassVar[int]
    tenant: _tenant_pb2.Tenant
    def __init__(self, tenant: _Optional[_Union[_tenant_pb2.Tenant, _Mapping]] = ...) -> None: ...

class ListTenantsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTenantsResponse(_message.Message):
    __slots__ = ("tenants",)
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    tenants: _containers.RepeatedCompositeFieldContainer[_tenant_pb2.Tenant]
    def __init__(self, tenants: _Optional[_Iterable[_Union[_tenant_pb2.Tenant, _Mapping]]] = ...) -> None: ...

class UpdateTenantRequest(_message.Message):
    __slots__ = ("tenant_id", "display_name")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    display_name: str
    def __init__(self, tenant_id: _Optional[str] = ..., display_name: _Optional[str] = ...) -> None: ...

class UpdateTenantResponse(_message.Message):
    __slots__ = ("tenant",)
    TENANT_FIELD_NUMBER: _ClassVar[int]
    tenant: _tenant_pb2.Tenant
    def __init__(self, tenant: _Optional[_Union[_tenant_pb2.Tenant, _Mapping]] = ...) -> None: ...

class DeleteTenantRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class DeleteTenantResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AddTenantMemberRequest(_message.Message):
    __slots__ = ("tenant_id", "user_id", "role")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    user_id: str
    role: _tenant_pb2.TenantRole
    def __init__(self, tenant_id: _Optional[str] = ..., user_id: _Optional[str] = ..., role: _Optional[_Union[_tenant_pb2.TenantRole, str]] = ...) -> None: ...

class AddTenantMemberResponse(_message.Message):
    __slots__ = ("member",)
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    member: _tenant_pb2.TenantMember
    def __init__(self, member: _Optional[_Union[_tenant_pb2.TenantMember, _Mapping]] = ...) -> None: ...

class InviteTenantMemberRequest(_message.Message):
    __slots__ = ("tenant_id", "email", "role")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    email: str
    role: _tenant_pb2.TenantRole
    def __init__(self, tenant_id: _Optional[str] = ..., email: _Optional[str] = ..., role: _Optional[_Union[_tenant_pb2.TenantRole, str]] = ...) -> None: ...

class InviteTenantMemberResponse(_message.Message):
    __slots__ = ("member",)
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    member: _tenant_pb2.TenantMember
    def __init__(self, member: _Optional[_Union[_tenant_pb2.TenantMember, _Mapping]] = ...) -> None: ...

class ListTenantMembersRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class ListTenantMembersResponse(_message.Message):
    __slots__ = ("members",)
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[_tenant_pb2.TenantMember]
    def __init__(self, members: _Optional[_Iterable[_Union[_tenant_pb2.TenantMember, _Mapping]]] = ...) -> None: ...

class UpdateTenantMemberRoleRequest(_message.Message):
    __slots__ = ("tenant_id", "user_id", "role")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    user_id: str
    role: _tenant_pb2.TenantRole
    def __init__(self, tenant_id: _Optional[str] = ..., user_id: _Optional[str] = ..., role: _Optional[_Union[_tenant_pb2.TenantRole, str]] = ...) -> None: ...

class UpdateTenantMemberRoleResponse(_message.Message):
    __slots__ = ("member",)
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    member: _tenant_pb2.TenantMember
    def __init__(self, member: _Optional[_Union[_tenant_pb2.TenantMember, _Mapping]] = ...) -> None: ...

class RemoveTenantMemberRequest(_message.Message):
    __slots__ = ("tenant_id", "user_id", "email")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    user_id: str
    email: str
    def __init__(self, tenant_id: _Optional[str] = ..., user_id: _Optional[str] = ..., email: _Optional[str] = ...) -> None: ...

class RemoveTenantMemberResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
