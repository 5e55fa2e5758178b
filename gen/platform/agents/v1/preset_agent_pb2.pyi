from gen.platform.modelmanager.v1 import sharing_pb2 as _sharing_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PresetAgentSampling(_message.Message):
    __slots__ = ("temperature", "top_p", "max_output_tokens")
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    temperature: float
    top_p: float
    max_output_tokens: int
    def __init__(self, temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., max_output_tokens: _Optional[int] = ...) -> None: ...

class PresetAgent(_message.Message):
    __slots__ = ("name", "public_model_id", "display_name", "base_model", "base_model_resolved", "instructions", "default_mcp_servers", "default_rags", "sampling", "output_guardrails", "sharing", "tenant_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    BASE_MODEL_FIELD_NUMBER: _ClassVar[int]
    BASE_MODEL_RESOLVED_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MCP_SERVERS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_RAGS_FIELD_NUMBER: _ClassVar[int]
    SAMPLING_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_GUARDRAILS_FIELD_NUMBER: _ClassVar[int]
    SHARING_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    public_model_id: str
    display_name: str
    base_model: str
    base_model_resolved: bool
    instructions: str
    default_mcp_servers: _containers.RepeatedScalarFieldContainer[str]
    default_rags: _containers.RepeatedScalarFieldContainer[str]
    sampling: PresetAgentSampling
    output_guardrails: _containers.RepeatedScalarFieldContainer[str]
    sharing: _sharing_pb2.Sharing
    tenant_id: str
    def __init__(self, name: _Optional[str] = ..., public_model_id: _Optional[str] = ..., display_name: _Optional[str] = ..., base_model: _Optional[str] = ..., base_model_resolved: _Optional[bool] = ..., instructions: _Optional[str] = ..., default_mcp_servers: _Optional[_Iterable[str]] = ..., default_rags: _Optional[_Iterable[str]] = ..., sampling: _Optional[_Union[PresetAgentSampling, _Mapping]] = ..., output_guardrails: _Optional[_Iterable[str]] = ..., sharing: _Optional[_Union[_sharing_pb2.Sharing, _Mapping]] = ..., tenant_id: _Optional[str] = ...) -> None: ...
