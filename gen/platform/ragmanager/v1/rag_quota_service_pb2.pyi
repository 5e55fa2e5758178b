from gen.platform.ragmanager.v1 import rag_quota_pb2 as _rag_quota_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SetQuotaRequest(_message.Message):
    __slots__ = ("id", "tenant_id", "quota")
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    QUOTA_FIELD_NUMBER: _ClassVar[int]
    id: str
    tenant_id: str
    quota: str
    def __init__(self, id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., quota: _Optional[str] = ...) -> None: ...

class SetQuotaResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetQuotaRequest(_message.Message):
    __slots__ = ("id", "tenant_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    tenant_id: str
    def __init__(self, id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class GetQuotaResponse(_message.Message):
    __slots__ = ("id", "tenant_id", "quota_bytes", "used_bytes", "quota")
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    QUOTA_FIELD_NUMBER: _ClassVar[int]
    id: str
    tenant_id: str
    quota_bytes: int
    used_bytes: int
    quota: str
    def __init__(self, id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., quota_bytes: _Optional[int] = ..., used_bytes: _Optional[int] = ..., quota: _Optional[str] = ...) -> None: ...

class UnsetQuotaRequest(_message.Message):
    __slots__ = ("id", "tenant_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    tenant_id: str
    def __init__(self, id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class UnsetQuotaResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetTenantQuotaRequest(_message.Message):
    __slots__ = ("tenant_id", "quota")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    QUOTA_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    quota: str
    def __init__(self, tenant_id: _Optional[str] = ..., quota: _Optional[str] = ...) -> None: ...

class SetTenantQuotaResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetTenantQuotaRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class GetTenantQuotaResponse(_message.Message):
    __slots__ = ("tenant_id", "quota_bytes", "quota")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    QUOTA_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    quota_bytes: int
    quota: str
    def __init__(self, tenant_id: _Optional[str] = ..., quota_bytes: _Optional[int] = ..., quota: _Optional[str] = ...) -> None: ...

class UnsetTenantQuotaRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class UnsetTenantQuotaResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BatchSetQuotaRequest(_message.Message):
    __slots__ = ("quota", "tenant_id", "ids")
    QUOTA_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    quota: str
    tenant_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, quota: _Optional[str] = ..., tenant_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class BatchSetQuotaResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BatchUnsetQuotaRequest(_message.Message):
    __slots__ = ("tenant_id", "ids")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tenant_id: _Optional[str] = ..., ids: _Optional[_Iterable[str]] = ...) -> None: ...

class BatchUnsetQuotaResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetDefaultQuotaRequest(_message.Message):
    __slots__ = ("tenant_id", "default_quota")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_QUOTA_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    default_quota: str
    def __init__(self, tenant_id: _Optional[str] = ..., default_quota: _Optional[str] = ...) -> None: ...

class SetDefaultQuotaResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetDefaultQuotaRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class GetDefaultQuotaResponse(_message.Message):
    __slots__ = ("tenant_id", "default_quota_bytes", "default_quota")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_QUOTA_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    default_quota_bytes: int
    default_quota: str
    def __init__(self, tenant_id: _Optional[str] = ..., default_quota_bytes: _Optional[int] = ..., default_quota: _Optional[str] = ...) -> None: ...

class UnsetDefaultQuotaRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class UnsetDefaultQuotaResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetTenantUsageRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class GetTenantUsageResponse(_message.Message):
    __slots__ = ("services", "tenant_quota_bytes", "tenant_total_used_bytes", "tenant_quota")
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    TENANT_QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    TENANT_TOTAL_USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    TENANT_QUOTA_FIELD_NUMBER: _ClassVar[int]
    services: _containers.RepeatedCompositeFieldContainer[_rag_quota_pb2.ServiceUsage]
    tenant_quota_bytes: int
    tenant_total_used_bytes: int
    tenant_quota: str
    def __init__(self, services: _Optional[_Iterable[_Union[_rag_quota_pb2.ServiceUsage, _Mapping]]] = ..., tenant_quota_bytes: _Optional[int] = ..., tenant_total_used_bytes: _Optional[int] = ..., tenant_quota: _Optional[str] = ...) -> None: ...

class ListTenantsUsageRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTenantsUsageResponse(_message.Message):
    __slots__ = ("tenants",)
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    tenants: _containers.RepeatedCompositeFieldContainer[_rag_quota_pb2.TenantUsageSummary]
    def __init__(self, tenants: _Optional[_Iterable[_Union[_rag_quota_pb2.TenantUsageSummary, _Mapping]]] = ...) -> None: ...
