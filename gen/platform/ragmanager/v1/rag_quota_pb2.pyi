from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ServiceUsage(_message.Message):
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

class TenantUsageSummary(_message.Message):
    __slots__ = ("tenant_id", "tenant_name", "service_count", "total_used_bytes", "tenant_quota_bytes", "tenant_quota")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVICE_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    TENANT_QUOTA_BYTES_FIELD_NUMBER: _ClassVar[int]
    TENANT_QUOTA_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    tenant_name: str
    service_count: int
    total_used_bytes: int
    tenant_quota_bytes: int
    tenant_quota: str
    def __init__(self, tenant_id: _Optional[str] = ..., tenant_name: _Optional[str] = ..., service_count: _Optional[int] = ..., total_used_bytes: _Optional[int] = ..., tenant_quota_bytes: _Optional[int] = ..., tenant_quota: _Optional[str] = ...) -> None: ...
