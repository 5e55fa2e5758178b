import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ApiKeyType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    API_KEY_TYPE_UNSPECIFIED: _ClassVar[ApiKeyType]
    API_KEY_TYPE_PERSONAL: _ClassVar[ApiKeyType]
    API_KEY_TYPE_SERVICE_ACCOUNT: _ClassVar[ApiKeyType]
    API_KEY_TYPE_PERSONAL_ALL_RESOURCES: _ClassVar[ApiKeyType]

class ApiKeyState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    API_KEY_STATE_UNSPECIFIED: _ClassVar[ApiKeyState]
    API_KEY_STATE_ACTIVE: _ClassVar[ApiKeyState]
    API_KEY_STATE_DISABLED: _ClassVar[ApiKeyState]
    API_KEY_STATE_REVOKED: _ClassVar[ApiKeyState]

class ResourceKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESOURCE_KIND_UNSPECIFIED: _ClassVar[ResourceKind]
    RESOURCE_KIND_MODEL_DEPLOYMENT: _ClassVar[ResourceKind]
    RESOURCE_KIND_EXTERNAL_MODEL: _ClassVar[ResourceKind]
    RESOURCE_KIND_PRESET_AGENT: _ClassVar[ResourceKind]
    RESOURCE_KIND_MCP_SERVER: _ClassVar[ResourceKind]
    RESOURCE_KIND_RAG: _ClassVar[ResourceKind]
    RESOURCE_KIND_MODEL_ALIAS: _ClassVar[ResourceKind]
API_KEY_TYPE_UNSPECIFIED: ApiKeyType
API_KEY_TYPE_PERSONAL: ApiKeyType
API_KEY_TYPE_SERVICE_ACCOUNT: ApiKeyType
API_KEY_TYPE_PERSONAL_ALL_RESOURCES: ApiKeyType
API_KEY_STATE_UNSPECIFIED: ApiKeyState
API_KEY_STATE_ACTIVE: ApiKeyState
API_KEY_STATE_DISABLED: ApiKeyState
API_KEY_STATE_REVOKED: ApiKeyState
RESOURCE_KIND_UNSPECIFIED: ResourceKind
RESOURCE_KIND_MODEL_DEPLOYMENT: ResourceKind
RESOURCE_KIND_EXTERNAL_MODEL: ResourceKind
RESOURCE_KIND_PRESET_AGENT: ResourceKind
RESOURCE_KIND_MCP_SERVER: ResourceKind
RESOURCE_KIND_RAG: ResourceKind
RESOURCE_KIND_MODEL_ALIAS: ResourceKind

class ResourceRef(_message.Message):
    __slots__ = ("kind", "name")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    kind: ResourceKind
    name: str
    def __init__(self, kind: _Optional[_Union[ResourceKind, str]] = ..., name: _Optional[str] = ...) -> None: ...

class ApiKey(_message.Message):
    __slots__ = ("id", "tenant_id", "type", "state", "name", "description", "owner_user_id", "service_account_id", "prefix", "create_time", "expire_time", "last_used_time", "grants", "group_ids")
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    OWNER_USER_ID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_TIME_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    GROUP_IDS_FIELD_NUMBER: _ClassVar[int]
    id: str
    tenant_id: str
    type: ApiKeyType
    state: ApiKeyState
    name: str
    description: str
    owner_user_id: str
    service_account_id: str
    prefix: str
    create_time: _timestamp_pb2.Timestamp
    expire_time: _timestamp_pb2.Timestamp
    last_used_time: _timestamp_pb2.Timestamp
    grants: _containers.RepeatedCompositeFieldContainer[ResourceRef]
    group_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., type: _Optional[_Union[ApiKeyType, str]] = ..., state: _Optional[_Union[ApiKeyState, str]] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., owner_user_id: _Optional[str] = ..., service_account_id: _Optional[str] = ..., prefix: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_used_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., grants: _Optional[_Iterable[_Union[ResourceRef, _Mapping]]] = ..., group_ids: _Optional[_Iterable[str]] = ...) -> None: ...
