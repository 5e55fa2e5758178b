from gen.platform.modelmanager.v1 import model_deployment_pb2 as _model_deployment_pb2
from gen.platform.modelmanager.v1 import permission_pb2 as _permission_pb2
from gen.platform.modelmanager.v1 import sharing_pb2 as _sharing_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateModelDeploymentRequest(_message.Message):
    __slots__ = ("model_deployment",)
    MODEL_DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    model_deployment: _model_deployment_pb2.ModelDeployment
    def __init__(self, model_deployment: _Optional[_Union[_model_deployment_pb2.ModelDeployment, _Mapping]] = ...) -> None: ...

class CreateModelDeploymentResponse(_message.Message):
    __slots__ = ("model_deployment",)
    MODEL_DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    model_deployment: _model_deployment_pb2.ModelDeployment
    def __init__(self, model_deployment: _Optional[_Union[_model_deployment_pb2.ModelDeployment, _Mapping]] = ...) -> None: ...

class GetModelDeploymentRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetModelDeploymentResponse(_message.Message):
    __slots__ = ("model_deployment",)
    MODEL_DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    model_deployment: _model_deployment_pb2.ModelDeployment
    def __init__(self, model_deployment: _Optional[_Union[_model_deployment_pb2.ModelDeployment, _Mapping]] = ...) -> None: ...

class UpdateModelDeploymentRequest(_message.Message):
    __slots__ = ("model_deployment",)
    MODEL_DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    model_deployment: _model_deployment_pb2.ModelDeployment
    def __init__(self, model_deployment: _Optional[_Union[_model_deployment_pb2.ModelDeployment, _Mapping]] = ...) -> None: ...

class UpdateModelDeploymentResponse(_message.Message):
    __slots__ = ("model_deployment",)
    MODEL_DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    model_deployment: _model_deployment_pb2.ModelDeployment
    def __init__(self, model_deployment: _Optional[_Union[_model_deployment_pb2.ModelDeployment, _Mapping]] = ...) -> None: ...

class DeleteModelDeploymentRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteModelDeploymentResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListModelDeploymentsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListModelDeploymentsResponse(_message.Message):
    __slots__ = ("model_deployments",)
    MODEL_DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    model_deployments: _containers.RepeatedCompositeFieldContainer[_model_deployment_pb2.ModelDeployment]
    def __init__(self, model_deployments: _Optional[_Iterable[_Union[_model_deployment_pb2.ModelDeployment, _Mapping]]] = ...) -> None: ...

class ListModelDeploymentPermissionsRequest(_message.Message):
    __slots__ = ("name", "subject_type", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject_type: _permission_pb2.SubjectType
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject_type: _Optional[_Union[_permission_pb2.SubjectType, str]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class ListModelDeploymentPermissionsResponse(_message.Message):
    __slots__ = ("permissions",)
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    permissions: _containers.RepeatedCompositeFieldContainer[_permission_pb2.DeploymentPermission]
    def __init__(self, permissions: _Optional[_Iterable[_Union[_permission_pb2.DeploymentPermission, _Mapping]]] = ...) -> None: ...

class AddModelDeploymentPermissionRequest(_message.Message):
    __slots__ = ("name", "subject", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject: _permission_pb2.Subject
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject: _Optional[_Union[_permission_pb2.Subject, _Mapping]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class AddModelDeploymentPermissionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemoveModelDeploymentPermissionRequest(_message.Message):
    __slots__ = ("name", "subject", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject: _permission_pb2.Subject
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject: _Optional[_Union[_permission_pb2.Subject, _Mapping]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class RemoveModelDeploymentPermissionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpdateModelDeploymentSharingRequest(_message.Message):
    __slots__ = ("name", "sharing")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHARING_FIELD_NUMBER: _ClassVar[int]
    name: str
    sharing: _sharing_pb2.Sharing
    def __init__(self, name: _Optional[str] = ..., sharing: _Optional[_Union[_sharing_pb2.Sharing, _Mapping]] = ...) -> None: ...

class UpdateModelDeploymentSharingResponse(_message.Message):
    __slots__ = ("sharing",)
    SHARING_FIELD_NUMBER: _ClassVar[int]
    sharing: _sharing_pb2.Sharing
    def __init__(self, sharing: _Optional[_Union[_sharing_pb2.Sharing, _Mapping]] = ...) -> None: ...
