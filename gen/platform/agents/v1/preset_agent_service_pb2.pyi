from gen.platform.agents.v1 import preset_agent_pb2 as _preset_agent_pb2
from gen.platform.modelmanager.v1 import permission_pb2 as _permission_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreatePresetAgentRequest(_message.Message):
    __slots__ = ("tenant_id", "preset_agent")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PRESET_AGENT_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    preset_agent: _preset_agent_pb2.PresetAgent
    def __init__(self, tenant_id: _Optional[str] = ..., preset_agent: _Optional[_Union[_preset_agent_pb2.PresetAgent, _Mapping]] = ...) -> None: ...

class CreatePresetAgentResponse(_message.Message):
    __slots__ = ("preset_agent",)
    PRESET_AGENT_FIELD_NUMBER: _ClassVar[int]
    preset_agent: _preset_agent_pb2.PresetAgent
    def __init__(self, preset_agent: _Optional[_Union[_preset_agent_pb2.PresetAgent, _Mapping]] = ...) -> None: ...

class CreatePlatformPresetAgentRequest(_message.Message):
    __slots__ = ("preset_agent",)
    PRESET_AGENT_FIELD_NUMBER: _ClassVar[int]
    preset_agent: _preset_agent_pb2.PresetAgent
    def __init__(self, preset_agent: _Optional[_Union[_preset_agent_pb2.PresetAgent, _Mapping]] = ...) -> None: ...

class CreatePlatformPresetAgentResponse(_message.Message):
    __slots__ = ("preset_agent",)
    PRESET_AGENT_FIELD_NUMBER: _ClassVar[int]
    preset_agent: _preset_agent_pb2.PresetAgent
    def __init__(self, preset_agent: _Optional[_Union[_preset_agent_pb2.PresetAgent, _Mapping]] = ...) -> None: ...

class GetPresetAgentRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetPresetAgentResponse(_message.Message):
    __slots__ = ("preset_agent",)
    PRESET_AGENT_FIELD_NUMBER: _ClassVar[int]
    preset_agent: _preset_agent_pb2.PresetAgent
    def __init__(self, preset_agent: _Optional[_Union[_preset_agent_pb2.PresetAgent, _Mapping]] = ...) -> None: ...

class UpdatePresetAgentRequest(_message.Message):
    __slots__ = ("preset_agent",)
    PRESET_AGENT_FIELD_NUMBER: _ClassVar[int]
    preset_agent: _preset_agent_pb2.PresetAgent
    def __init__(self, preset_agent: _Optional[_Union[_preset_agent_pb2.PresetAgent, _Mapping]] = ...) -> None: ...

class UpdatePresetAgentResponse(_message.Message):
    __slots__ = ("preset_agent",)
    PRESET_AGENT_FIELD_NUMBER: _ClassVar[int]
    preset_agent: _preset_agent_pb2.PresetAgent
    def __init__(self, preset_agent: _Optional[_Union[_preset_agent_pb2.PresetAgent, _Mapping]] = ...) -> None: ...

class DeletePresetAgentRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeletePresetAgentResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListPresetAgentsRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class ListPresetAgentsResponse(_message.Message):
    __slots__ = ("preset_agents",)
    PRESET_AGENTS_FIELD_NUMBER: _ClassVar[int]
    preset_agents: _containers.RepeatedCompositeFieldContainer[_preset_agent_pb2.PresetAgent]
    def __init__(self, preset_agents: _Optional[_Iterable[_Union[_preset_agent_pb2.PresetAgent, _Mapping]]] = ...) -> None: ...

class ListPresetAgentPermissionsRequest(_message.Message):
    __slots__ = ("name", "subject_type", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject_type: _permission_pb2.SubjectType
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject_type: _Optional[_Union[_permission_pb2.SubjectType, str]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class ListPresetAgentPermissionsResponse(_message.Message):
    __slots__ = ("permissions",)
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    permissions: _containers.RepeatedCompositeFieldContainer[_permission_pb2.DeploymentPermission]
    def __init__(self, permissions: _Optional[_Iterable[_Union[_permission_pb2.DeploymentPermission, _Mapping]]] = ...) -> None: ...

class AddPresetAgentPermissionRequest(_message.Message):
    __slots__ = ("name", "subject", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject: _permission_pb2.Subject
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject: _Optional[_Union[_permission_pb2.Subject, _Mapping]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class AddPresetAgentPermissionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemovePresetAgentPermissionRequest(_message.Message):
    __slots__ = ("name", "subject", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject: _permission_pb2.Subject
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject: _Optional[_Union[_permission_pb2.Subject, _Mapping]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class RemovePresetAgentPermissionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
