from gen.platform.modelmanager.v1 import external_model_pb2 as _external_model_pb2
from gen.platform.modelmanager.v1 import metrics_pb2 as _metrics_pb2
from gen.platform.modelmanager.v1 import permission_pb2 as _permission_pb2
from gen.platform.modelmanager.v1 import sharing_pb2 as _sharing_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateExternalModelRequest(_message.Message):
    __slots__ = ("external_model",)
    EXTERNAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    external_model: _external_model_pb2.ExternalModel
    def __init__(self, external_model: _Optional[_Union[_external_model_pb2.ExternalModel, _Mapping]] = ...) -> None: ...

class CreateExternalModelResponse(_message.Message):
    __slots__ = ("external_model",)
    EXTERNAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    external_model: _external_model_pb2.ExternalModel
    def __init__(self, external_model: _Optional[_Union[_external_model_pb2.ExternalModel, _Mapping]] = ...) -> None: ...

class CreateTenantExternalModelRequest(_message.Message):
    __slots__ = ("external_model", "tenant_id")
    EXTERNAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    external_model: _external_model_pb2.ExternalModel
    tenant_id: str
    def __init__(self, external_model: _Optional[_Union[_external_model_pb2.ExternalModel, _Mapping]] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class CreateTenantExternalModelResponse(_message.Message):
    __slots__ = ("external_model",)
    EXTERNAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    external_model: _external_model_pb2.ExternalModel
    def __init__(self, external_model: _Optional[_Union[_external_model_pb2.ExternalModel, _Mapping]] = ...) -> None: ...

class GetExternalModelRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetExternalModelResponse(_message.Message):
    __slots__ = ("external_model",)
    EXTERNAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    external_model: _external_model_pb2.ExternalModel
    def __init__(self, external_model: _Optional[_Union[_external_model_pb2.ExternalModel, _Mapping]] = ...) -> None: ...

class UpdateExternalModelRequest(_message.Message):
    __slots__ = ("external_model",)
    EXTERNAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    external_model: _external_model_pb2.ExternalModel
    def __init__(self, external_model: _Optional[_Union[_external_model_pb2.ExternalModel, _Mapping]] = ...) -> None: ...

class UpdateExternalModelResponse(_message.Message):
    __slots__ = ("external_model",)
    EXTERNAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    external_model: _external_model_pb2.ExternalModel
    def __init__(self, external_model: _Optional[_Union[_external_model_pb2.ExternalModel, _Mapping]] = ...) -> None: ...

class UpdateExternalModelSharingRequest(_message.Message):
    __slots__ = ("name", "sharing")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SHARING_FIELD_NUMBER: _ClassVar[int]
    name: str
    sharing: _sharing_pb2.Sharing
    def __init__(self, name: _Optional[str] = ..., sharing: _Optional[_Union[_sharing_pb2.Sharing, _Mapping]] = ...) -> None: ...

class UpdateExternalModelSharingResponse(_message.Message):
    __slots__ = ("sharing",)
    SHARING_FIELD_NUMBER: _ClassVar[int]
    sharing: _sharing_pb2.Sharing
    def __init__(self, sharing: _Optional[_Union[_sharing_pb2.Sharing, _Mapping]] = ...) -> None: ...

class DeleteExternalModelRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteExternalModelResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListExternalModelsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListExternalModelsResponse(_message.Message):
    __slots__ = ("external_models",)
    EXTERNAL_MODELS_FIELD_NUMBER: _ClassVar[int]
    external_models: _containers.RepeatedCompositeFieldContainer[_external_model_pb2.ExternalModelSummary]
    def __init__(self, external_models: _Optional[_Iterable[_Union[_external_model_pb2.ExternalModelSummary, _Mapping]]] = ...) -> None: ...

class ListExternalModelPermissionsRequest(_message.Message):
    __slots__ = ("name", "subject_type", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject_type: _permission_pb2.SubjectType
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject_type: _Optional[_Union[_permission_pb2.SubjectType, str]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class ListExternalModelPermissionsResponse(_message.Message):
    __slots__ = ("permissions",)
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    permissions: _containers.RepeatedCompositeFieldContainer[_permission_pb2.DeploymentPermission]
    def __init__(self, permissions: _Optional[_Iterable[_Union[_permission_pb2.DeploymentPermission, _Mapping]]] = ...) -> None: ...

class AddExternalModelPermissionRequest(_message.Message):
    __slots__ = ("name", "subject", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject: _permission_pb2.Subject
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject: _Optional[_Union[_permission_pb2.Subject, _Mapping]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class AddExternalModelPermissionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemoveExternalModelPermissionRequest(_message.Message):
    __slots__ = ("name", "subject", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject: _permission_pb2.Subject
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject: _Optional[_Union[_permission_pb2.Subject, _Mapping]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class RemoveExternalModelPermissionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetExternalModelMetricsRequest(_message.Message):
    __slots__ = ("name", "start_time", "end_time", "step")
    NAME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    name: str
    start_time: int
    end_time: int
    step: _metrics_pb2.MetricsStep
    def __init__(self, name: _Optional[str] = ..., start_time: _Optional[int] = ..., end_time: _Optional[int] = ..., step: _Optional[_Union[_metrics_pb2.MetricsStep, str]] = ...) -> None: ...

class GetExternalModelMetricsResponse(_message.Message):
    __slots__ = ("time_range", "metrics")
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    time_range: _metrics_pb2.MetricsTimeRange
    metrics: _external_model_pb2.ExternalModelMetrics
    def __init__(self, time_range: _Optional[_Union[_metrics_pb2.MetricsTimeRange, _Mapping]] = ..., metrics: _Optional[_Union[_external_model_pb2.ExternalModelMetrics, _Mapping]] = ...) -> None: ...
