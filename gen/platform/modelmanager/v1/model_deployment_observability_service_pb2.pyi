from gen.platform.modelmanager.v1 import metrics_pb2 as _metrics_pb2
from gen.platform.modelmanager.v1 import model_deployment_observability_pb2 as _model_deployment_observability_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetModelDeploymentGpuOverviewRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetModelDeploymentGpuOverviewResponse(_message.Message):
    __slots__ = ("nodes", "deployments", "metrics_source")
    NODES_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    METRICS_SOURCE_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[_model_deployment_observability_pb2.GpuNode]
    deployments: _containers.RepeatedCompositeFieldContainer[_model_deployment_observability_pb2.ModelDeploymentGpuSummary]
    metrics_source: _model_deployment_observability_pb2.GpuMetricsSource
    def __init__(self, nodes: _Optional[_Iterable[_Union[_model_deployment_observability_pb2.GpuNode, _Mapping]]] = ..., deployments: _Optional[_Iterable[_Union[_model_deployment_observability_pb2.ModelDeploymentGpuSummary, _Mapping]]] = ..., metrics_source: _Optional[_Union[_model_deployment_observability_pb2.GpuMetricsSource, str]] = ...) -> None: ...

class GetModelDeploymentMetricsRequest(_message.Message):
    __slots__ = ("deployment_name", "start_time", "end_time", "step")
    DEPLOYMENT_NAME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    deployment_name: str
    start_time: int
    end_time: int
    step: _metrics_pb2.MetricsStep
    def __init__(self, deployment_name: _Optional[str] = ..., start_time: _Optional[int] = ..., end_time: _Optional[int] = ..., step: _Optional[_Union[_metrics_pb2.MetricsStep, str]] = ...) -> None: ...

class GetModelDeploymentMetricsResponse(_message.Message):
    __slots__ = ("time_range", "metrics")
    TIME_RANGE_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    time_range: _metrics_pb2.MetricsTimeRange
    metrics: _model_deployment_observability_pb2.ModelDeploymentMetrics
    def __init__(self, time_range: _Optional[_Union[_metrics_pb2.MetricsTimeRange, _Mapping]] = ..., metrics: _Optional[_Union[_model_deployment_observability_pb2.ModelDeploymentMetrics, _Mapping]] = ...) -> None: ...

class ListNodeModelCacheUsageRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListNodeModelCacheUsageResponse(_message.Message):
    __slots__ = ("nodes",)
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[_model_deployment_observability_pb2.NodeModelCacheUsage]
    def __init__(self, nodes: _Optional[_Iterable[_Union[_model_deployment_observability_pb2.NodeModelCacheUsage, _Mapping]]] = ...) -> None: ...
