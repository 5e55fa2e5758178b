from gen.platform.tenants.v1 import api_key_pb2 as _api_key_pb2
from gen.platform.tenants.v1 import group_pb2 as _group_pb2
from gen.platform.tenants.v1 import service_account_pb2 as _service_account_pb2
from gen.platform.tenants.v1 import tenant_pb2 as _tenant_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PageRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListApiKeysRequest(_message.Message):
    __slots__ = ("tenant_id", "service_account_id", "include_revoked", "page")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_REVOKED_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    service_account_id: str
    include_revoked: bool
    page: PageRequest
    def __init__(self, tenant_id: _Optional[str] = ..., service_account_id: _Optional[str] = ..., include_revoked: _Optional[bool] = ..., page: _Optional[_Union[PageRequest, _Mapping]] = ...) -> None: ...

class ListApiKeysResponse(_message.Message):
    __slots__ = ("api_keys", "next_page_token")
    API_KEYS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    api_keys: _containers.RepeatedCompositeFieldContainer[_api_key_pb2.ApiKey]
    next_page_token: str
    def __init__(self, api_keys: _Optional[_Iterable[_Union[_api_key_pb2.ApiKey, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListGroupsRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_attachable", "page")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ATTACHABLE_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_attachable: bool
    page: PageRequest
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_attachable: _Optional[bool] = ..., page: _Optional[_Union[PageRequest, _Mapping]] = ...) -> None: ...

class ListGroupsResponse(_message.Message):
    __slots__ = ("groups", "next_page_token")
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[_group_pb2.Group]
    next_page_token: str
    def __init__(self, groups: _Optional[_Iterable[_Union[_group_pb2.Group, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListGroupMembersRequest(_message.Message):
    __slots__ = ("tenant_id", "group_id", "page")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    group_id: str
    page: PageRequest
    def __init__(self, tenant_id: _Optional[str] = ..., group_id: _Optional[str] = ..., page: _Optional[_Union[PageRequest, _Mapping]] = ...) -> None: ...

class ListGroupMembersResponse(_message.Message):
    __slots__ = ("members", "next_page_token")
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[_group_pb2.GroupMember]
    next_page_token: str
    def __init__(self, members: _Optional[_Iterable[_Union[_group_pb2.GroupMember, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListTenantMembersRequest(_message.Message):
    __slots__ = ("tenant_id", "page")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    page: PageRequest
    def __init__(self, tenant_id: _Optional[str] = ..., page: _Optional[_Union[PageRequest, _Mapping]] = ...) -> None: ...

class ListTenantMembersResponse(_message.Message):
    __slots__ = ("members", "next_page_token")
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[_tenant_pb2.TenantMember]
    next_page_token: str
    def __init__(self, members: _Optional[_Iterable[_Union[_tenant_pb2.TenantMember, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListServiceAccountsRequest(_message.Message):
    __slots__ = ("tenant_id", "page")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    page: PageRequest
    def __init__(self, tenant_id: _Optional[str] = ..., page: _Optional[_Union[PageRequest, _Mapping]] = ...) -> None: ...

class ListServiceAccountsResponse(_message.Message):
    __slots__ = ("service_accounts", "next_page_token")
    SERVICE_ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    service_accounts: _containers.RepeatedCompositeFieldContainer[_service_account_pb2.ServiceAccount]
    next_page_token: str
    def __init__(self, service_accounts: _Optional[_Iterable[_Union[_service_account_pb2.ServiceAccount, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
