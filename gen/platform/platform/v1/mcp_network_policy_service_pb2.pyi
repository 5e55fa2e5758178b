from gen.platform.platform.v1 import mcp_network_policy_pb2 as _mcp_network_policy_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListMcpNetworkPoliciesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListMcpNetworkPoliciesResponse(_message.Message):
    __slots__ = ("policies",)
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    policies: _containers.RepeatedCompositeFieldContainer[_mcp_network_policy_pb2.McpNetworkPolicy]
    def __init__(self, policies: _Optional[_Iterable[_Union[_mcp_network_policy_pb2.McpNetworkPolicy, _Mapping]]] = ...) -> None: ...

class CreateMcpNetworkPolicyRequest(_message.Message):
    __slots__ = ("spec",)
    SPEC_FIELD_NUMBER: _ClassVar[int]
    spec: _mcp_network_policy_pb2.McpNetworkPolicySpec
    def __init__(self, spec: _Optional[_Union[_mcp_network_policy_pb2.McpNetworkPolicySpec, _Mapping]] = ...) -> None: ...

class CreateMcpNetworkPolicyResponse(_message.Message):
    __slots__ = ("policy",)
    POLICY_FIELD_NUMBER: _ClassVar[int]
    policy: _mcp_network_policy_pb2.McpNetworkPolicy
    def __init__(self, policy: _Optional[_Union[_mcp_network_policy_pb2.McpNetworkPolicy, _Mapping]] = ...) -> None: ...

class DeleteMcpNetworkPolicyRequest(_message.Message):
    __slots__ = ("name", "uid", "resource_version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    uid: str
    resource_version: str
    def __init__(self, name: _Optional[str] = ..., uid: _Optional[str] = ..., resource_version: _Optional[str] = ...) -> None: ...

class DeleteMcpNetworkPolicyResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
