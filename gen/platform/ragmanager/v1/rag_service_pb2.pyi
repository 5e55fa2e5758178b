from gen.platform.modelmanager.v1 import permission_pb2 as _permission_pb2
from gen.platform.ragmanager.v1 import rag_pb2 as _rag_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateRagRequest(_message.Message):
    __slots__ = ("rag", "tenant_id")
    RAG_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    rag: _rag_pb2.Rag
    tenant_id: str
    def __init__(self, rag: _Optional[_Union[_rag_pb2.Rag, _Mapping]] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class CreateRagResponse(_message.Message):
    __slots__ = ("rag",)
    RAG_FIELD_NUMBER: _ClassVar[int]
    rag: _rag_pb2.Rag
    def __init__(self, rag: _Optional[_Union[_rag_pb2.Rag, _Mapping]] = ...) -> None: ...

class CreatePlatformRagRequest(_message.Message):
    __slots__ = ("rag",)
    RAG_FIELD_NUMBER: _ClassVar[int]
    rag: _rag_pb2.Rag
    def __init__(self, rag: _Optional[_Union[_rag_pb2.Rag, _Mapping]] = ...) -> None: ...

class CreatePlatformRagResponse(_message.Message):
    __slots__ = ("rag",)
    RAG_FIELD_NUMBER: _ClassVar[int]
    rag: _rag_pb2.Rag
    def __init__(self, rag: _Optional[_Union[_rag_pb2.Rag, _Mapping]] = ...) -> None: ...

class GetRagRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetRagResponse(_message.Message):
    __slots__ = ("rag",)
    RAG_FIELD_NUMBER: _ClassVar[int]
    rag: _rag_pb2.Rag
    def __init__(self, rag: _Optional[_Union[_rag_pb2.Rag, _Mapping]] = ...) -> None: ...

class UpdateRagRequest(_message.Message):
    __slots__ = ("rag", "clear_score_threshold")
    RAG_FIELD_NUMBER: _ClassVar[int]
    CLEAR_SCORE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    rag: _rag_pb2.Rag
    clear_score_threshold: bool
    def __init__(self, rag: _Optional[_Union[_rag_pb2.Rag, _Mapping]] = ..., clear_score_threshold: _Optional[bool] = ...) -> None: ...

class UpdateRagResponse(_message.Message):
    __slots__ = ("rag",)
    RAG_FIELD_NUMBER: _ClassVar[int]
    rag: _rag_pb2.Rag
    def __init__(self, rag: _Optional[_Union[_rag_pb2.Rag, _Mapping]] = ...) -> None: ...

class DeleteRagRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class DeleteRagResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListRagsRequest(_message.Message):
    __slots__ = ("tenant_id",)
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    def __init__(self, tenant_id: _Optional[str] = ...) -> None: ...

class ListRagsResponse(_message.Message):
    __slots__ = ("rags",)
    RAGS_FIELD_NUMBER: _ClassVar[int]
    rags: _containers.RepeatedCompositeFieldContainer[_rag_pb2.Rag]
    def __init__(self, rags: _Optional[_Iterable[_Union[_rag_pb2.Rag, _Mapping]]] = ...) -> None: ...

class ListRagPermissionsRequest(_message.Message):
    __slots__ = ("id", "subject_type", "role")
    ID_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    id: str
    subject_type: _permission_pb2.SubjectType
    role: _permission_pb2.DeploymentRole
    def __init__(self, id: _Optional[str] = ..., subject_type: _Optional[_Union[_permission_pb2.SubjectType, str]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class ListRagPermissionsResponse(_message.Message):
    __slots__ = ("permissions",)
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    permissions: _containers.RepeatedCompositeFieldContainer[_permission_pb2.DeploymentPermission]
    def __init__(self, permissions: _Optional[_Iterable[_Union[_permission_pb2.DeploymentPermission, _Mapping]]] = ...) -> None: ...

class AddRagPermissionRequest(_message.Message):
    __slots__ = ("id", "subject", "role")
    ID_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    id: str
    subject: _permission_pb2.Subject
    role: _permission_pb2.DeploymentRole
    def __init__(self, id: _Optional[str] = ..., subject: _Optional[_Union[_permission_pb2.Subject, _Mapping]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class AddRagPermissionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemoveRagPermissionRequest(_message.Message):
    __slots__ = ("id", "subject", "role")
    ID_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    id: str
    subject: _permission_pb2.Subject
    role: _permission_pb2.DeploymentRole
    def __init__(self, id: _Optional[str] = ..., subject: _Optional[_Union[_permission_pb2.Subject, _Mapping]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class RemoveRagPermissionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
