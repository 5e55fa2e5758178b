from gen.platform.tenants.v1 import tenant_pb2 as _tenant_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetSessionRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class GetSessionResponse(_message.Message):
    __slots__ = ("user", "can_manage_tenants", "can_manage_models", "tenants")
    USER_FIELD_NUMBER: _ClassVar[int]
    CAN_MANAGE_TENANTS_FIELD_NUMBER: _ClassVar[int]
    CAN_MANAGE_MODELS_FIELD_NUMBER: _ClassVar[int]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    user: SessionUser
    can_manage_tenants: bool
    can_manage_models: bool
    tenants: _containers.RepeatedCompositeFieldContainer[TenantAccess]
    def __init__(self, user: _Optional[_Union[SessionUser, _Mapping]] = ..., can_manage_tenants: _Optional[bool] = ..., can_manage_models: _Optional[bool] = ..., tenants: _Optional[_Iterable[_Union[TenantAccess, _Mapping]]] = ...) -> None: ...

class SessionUser(_message.Message):
    __slots__ = ("user_id", "email", "display_name")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    EMAIL_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    email: str
    display_name: str
    def __init__(self, user_id: _Optional[str] = ..., email: _Optional[str] = ..., display_name: _Optional[str] = ...) -> None: ...

class TenantAccess(_message.Message):
    __slots__ = ("tenant_id", "tenant_name", "role", "capabilities")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    tenant_name: str
    role: _tenant_pb2.TenantRole
    capabilities: TenantCapabilities
    def __init__(self, tenant_id: _Optional[str] = ..., tenant_name: _Optional[str] = ..., role: _Optional[_Union[_tenant_pb2.TenantRole, str]] = ..., capabilities: _Optional[_Union[TenantCapabilities, _Mapping]] = ...) -> None: ...

class TenantCapabilities(_message.Message):
    __slots__ = ("tenant_admin", "create_rag", "create_agent", "create_external_model", "create_mcp_server", "list_members", "share", "capture")
    TENANT_ADMIN_FIELD_NUMBER: _ClassVar[int]
    CREATE_RAG_FIELD_NUMBER: _ClassVar[int]
    CREATE_AGENT_FIELD_NUMBER: _ClassVar[int]
    CREATE_EXTERNAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    CREATE_MCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    LIST_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    CAPTURE_FIELD_NUMBER: _ClassVar[int]
    tenant_admin: bool
    create_rag: bool
    create_agent: bool
    create_external_model: bool
    create_mcp_server: bool
    list_members: bool
    share: bool
    capture: bool
    def __init__(self, tenant_admin: _Optional[bool] = ..., create_rag: _Optional[bool] = ..., create_agent: _Optional[bool] = ..., create_external_model: _Optional[bool] = ..., create_mcp_server: _Optional[bool] = ..., list_members: _Optional[bool] = ..., share: _Optional[bool] = ..., capture: _Optional[bool] = ...) -> None: ...
