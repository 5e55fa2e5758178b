import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from gen.platform.tenants.v1 import api_key_pb2 as _api_key_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateApiKeyRequest(_message.Message):
    __slots__ = ("tenant_id", "type", "name", "description", "service_account_id", "expire_time", "grants", "group_ids")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    GROUP_IDS_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    type: _api_key_pb2.ApiKeyType
    name: str
    description: str
    service_account_id: str
    expire_time: _timestamp_pb2.Timestamp
    grants: _containers.RepeatedCompositeFieldContainer[_api_key_pb2.ResourceRef]
    group_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tenant_id: _Optional[str] = ..., type: _Optional[_Union[_api_key_pb2.ApiKeyType, str]] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., service_account_id: _Optional[str] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., grants: _Optional[_Iterable[_Union[_api_key_pb2.ResourceRef, _Mapping]]] = ..., group_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class CreateApiKeyResponse(_message.Message):
    __slots__ = ("api_key", "secret")
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    api_key: _api_key_pb2.ApiKey
    secret: str
    def __init__(self, api_key: _Optional[_Union[_api_key_pb2.ApiKey, _Mapping]] = ..., secret: _Optional[str] = ...) -> None: ...

class GetApiKeyRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ...) -> None: ...

class GetApiKeyResponse(_message.Message):
    __slots__ = ("api_key",)
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    api_key: _api_key_pb2.ApiKey
    def __init__(self, api_key: _Optional[_Union[_api_key_pb2.ApiKey, _Mapping]] = ...) -> None: ...

class ListApiKeysRequest(_message.Message):
    __slots__ = ("tenant_id", "service_account_id", "include_revoked")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_REVOKED_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    service_account_id: str
    include_revoked: bool
    def __init__(self, tenant_id: _Optional[str] = ..., service_account_id: _Optional[str] = ..., include_revoked: _Optional[bool] = ...) -> None: ...

class ListApiKeysResponse(_message.Message):
    __slots__ = ("api_keys",)
    API_KEYS_FIELD_NUMBER: _ClassVar[int]
    api_keys: _containers.RepeatedCompositeFieldContainer[_api_key_pb2.ApiKey]
    def __init__(self, api_keys: _Optional[_Iterable[_Union[_api_key_pb2.ApiKey, _Mapping]]] = ...) -> None: ...

class UpdateApiKeyRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_id", "name", "description", "expire_time")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_id: str
    name: str
    description: str
    expire_time: _timestamp_pb2.Timestamp
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class UpdateApiKeyResponse(_message.Message):
    __slots__ = ("api_key",)
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    api_key: _api_key_pb2.ApiKey
    def __init__(self, api_key: _Optional[_Union[_api_key_pb2.ApiKey, _Mapping]] = ...) -> None: ...

class DisableApiKeyRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ...) -> None: ...

class DisableApiKeyResponse(_message.Message):
    __slots__ = ("api_key",)
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    api_key: _api_key_pb2.ApiKey
    def __init__(self, api_key: _Optional[_Union[_api_key_pb2.ApiKey, _Mapping]] = ...) -> None: ...

class EnableApiKeyRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ...) -> None: ...

class EnableApiKeyResponse(_message.Message):
    __slots__ = ("api_key",)
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    api_key: _api_key_pb2.ApiKey
    def __init__(self, api_key: _Optional[_Union[_api_key_pb2.ApiKey, _Mapping]] = ...) -> None: ...

class RevokeApiKeyRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ...) -> None: ...

class RevokeApiKeyResponse(_message.Message):
    __slots__ = ("api_key",)
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    api_key: _api_key_pb2.ApiKey
    def __init__(self, api_key: _Optional[_Union[_api_key_pb2.ApiKey, _Mapping]] = ...) -> None: ...

class AddApiKeyGrantRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_id", "grant")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_id: str
    grant: _api_key_pb2.ResourceRef
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ..., grant: _Optional[_Union[_api_key_pb2.ResourceRef, _Mapping]] = ...) -> None: ...

class AddApiKeyGrantResponse(_message.Message):
    __slots__ = ("api_key",)
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    api_key: _api_key_pb2.ApiKey
    def __init__(self, api_key: _Optional[_Union[_api_key_pb2.ApiKey, _Mapping]] = ...) -> None: ...

class RemoveApiKeyGrantRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_id", "grant")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_id: str
    grant: _api_key_pb2.ResourceRef
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ..., grant: _Optional[_Union[_api_key_pb2.ResourceRef, _Mapping]] = ...) -> None: ...

class RemoveApiKeyGrantResponse(_message.Message):
    __slots__ = ("api_key",)
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    api_key: _api_key_pb2.ApiKey
    def __init__(self, api_key: _Optional[_Union[_api_key_pb2.ApiKey, _Mapping]] = ...) -> None: ...

class AttachApiKeyToGroupRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_id", "group_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_id: str
    group_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ..., group_id: _Optional[str] = ...) -> None: ...

class AttachApiKeyToGroupResponse(_message.Message):
    __slots__ = ("api_key",)
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    api_key: _api_key_pb2.ApiKey
    def __init__(self, api_key: _Optional[_Union[_api_key_pb2.ApiKey, _Mapping]] = ...) -> None: ...

class DetachApiKeyFromGroupRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_id", "group_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_id: str
    group_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_id: _Optional[str] = ..., group_id: _Optional[str] = ...) -> None: ...

class DetachApiKeyFromGroupResponse(_message.Message):
    __slots__ = ("api_key",)
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    api_key: _api_key_pb2.ApiKey
    def __init__(self, api_key: _Optional[_Union[_api_key_pb2.ApiKey, _Mapping]] = ...) -> None: ...
