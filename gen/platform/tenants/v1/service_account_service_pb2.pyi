from gen.platform.tenants.v1 import service_account_pb2 as _service_account_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateServiceAccountRequest(_message.Message):
    __slots__ = ("tenant_id", "name", "description")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    name: str
    description: str
    def __init__(self, tenant_id: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class CreateServiceAccountResponse(_message.Message):
    __slots__ = ("service_account",)
    SERVICE_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    service_account: _service_account_pb2.ServiceAccount
    def __init__(self, service_account: _Optional[_Union[_service_account_pb2.ServiceAccount, _Mapping]] = ...) -> None: ...

class GetServiceAccountRequest(_message.Message):
    __slots__ = ("tenant_id", "service_account_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    service_account_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., service_account_id: _Optional[str] = ...) -> None: ...

class GetServiceAccountResponse(_message.Message):
    __slots__ = ("service_account",)
    SERVICE_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    service_account: _service_account_pb2.ServiceAccount
    def __init__(self, service_account: _Optional[_Union[_service_account_pb2.ServiceAccount, _Mapping]] = ...) -> None: ...

class ListServiceAccountsRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class ListServiceAccountsResponse(_message.Message):
    __slots__ = ("service_accounts",)
    SERVICE_ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    service_accounts: _containers.RepeatedCompositeFieldContainer[_service_account_pb2.ServiceAccount]
    def __init__(self, service_accounts: _Optional[_Iterable[_Union[_service_account_pb2.ServiceAccount, _Mapping]]] = ...) -> None: ...

class UpdateServiceAccountRequest(_message.Message):
    __slots__ = ("tenant_id", "service_account_id", "description")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    service_account_id: str
    description: str
    def __init__(self, tenant_id: _Optional[str] = ..., service_account_id: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class UpdateServiceAccountResponse(_message.Message):
    __slots__ = ("service_account",)
    SERVICE_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    service_account: _service_account_pb2.ServiceAccount
    def __init__(self, service_account: _Optional[_Union[_service_account_pb2.ServiceAccount, _Mapping]] = ...) -> None: ...

class DeleteServiceAccountRequest(_message.Message):
    __slots__ = ("tenant_id", "service_account_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    service_account_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., service_account_id: _Optional[str] = ...) -> None: ...

class DeleteServiceAccountResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
