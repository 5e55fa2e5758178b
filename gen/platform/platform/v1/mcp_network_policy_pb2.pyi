from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class McpNetworkPolicySpec(_message.Message):
    __slots__ = ("allowed_networks", "description")
    ALLOWED_NETWORKS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    allowed_networks: _containers.RepeatedScalarFieldContainer[str]
    description: str
    def __init__(self, allowed_networks: _Optional[_Iterable[str]] = ..., description: _Optional[str] = ...) -> None: ...

class McpNetworkPolicy(_message.Message):
    __slots__ = ("name", "uid", "resource_version", "spec")
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    name: str
    uid: str
    resource_version: str
    spec: McpNetworkPolicySpec
    def __init__(self, name: _Optional[str] = ..., uid: _Optional[str] = ..., resource_version: _Optional[str] = ..., spec: _Optional[_Union[McpNetworkPolicySpec, _Mapping]] = ...) -> None: ...
