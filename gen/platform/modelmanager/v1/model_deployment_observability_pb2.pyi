from gen.platform.modelmanager.v1 import metrics_pb2 as _metrics_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GpuMetricsSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GPU_METRICS_SOURCE_UNSPECIFIED: _ClassVar[GpuMetricsSource]
    GPU_METRICS_SOURCE_LIVE: _ClassVar[GpuMetricsSource]
    GPU_METRICS_SOURCE_NODE_LABELS: _ClassVar[GpuMetricsSource]
    GPU_METRICS_SOURCE_LIVE_UNAVAILABLE: _ClassVar[GpuMetricsSource]
GPU_METRICS_SOURCE_UNSPECIFIED: GpuMetricsSource
GPU_METRICS_SOURCE_LIVE: GpuMetricsSource
GPU_METRICS_SOURCE_NODE_LABELS: GpuMetricsSource
GPU_METRICS_SOURCE_LIVE_UNAVAILABLE: GpuMetricsSource

class GpuNode(_message.Message):
    __slots__ = ("node_name", "gpus")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    gpus: _containers.RepeatedCompositeFieldContainer[GpuDevice]
    def __init__(self, node_name: _Optional[str] = ..., gpus: _Optional[_Iterable[_Union[GpuDevice, _Mapping]]] = ...) -> None: ...

class GpuDevice(_message.Message):
    __slots__ = ("id", "uuid", "model", "total_vram_mib", "used_vram_mib", "free_vram_mib")
    ID_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    TOTAL_VRAM_MIB_FIELD_NUMBER: _ClassVar[int]
    USED_VRAM_MIB_FIELD_NUMBER: _ClassVar[int]
    FREE_VRAM_MIB_FIELD_NUMBER: _ClassVar[int]
    id: str
    uuid: str
    model: str
    total_vram_mib: int
    used_vram_mib: int
    free_vram_mib: int
    def __init__(self, id: _Optional[str] = ..., uuid: _Optional[str] = ..., model: _Optional[str] = ..., total_vram_mib: _Optional[int] = ..., used_vram_mib: _Optional[int] = ..., free_vram_mib: _Optional[int] = ...) -> None: ...

class ModelDeploymentGpuSummary(_message.Message):
    __slots__ = ("uid", "name", "gpus")
    UID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    uid: str
    name: str
    gpus: _containers.RepeatedCompositeFieldContainer[GpuUsage]
    def __init__(self, uid: _Optional[str] = ..., name: _Optional[str] = ..., gpus: _Optional[_Iterable[_Union[GpuUsage, _Mapping]]] = ...) -> None: ...

class GpuUsage(_message.Message):
    __slots__ = ("node_name", "gpu_id", "gpu_uuid", "used_vram_mib")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    GPU_ID_FIELD_NUMBER: _ClassVar[int]
    GPU_UUID_FIELD_NUMBER: _ClassVar[int]
    USED_VRAM_MIB_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    gpu_id: str
    gpu_uuid: str
    used_vram_mib: int
    def __init__(self, node_name: _Optional[str] = ..., gpu_id: _Optional[str] = ..., gpu_uuid: _Optional[str] = ..., used_vram_mib: _Optional[int] = ...) -> None: ...

class ModelDeploymentMetrics(_message.Message):
    __slots__ = ("total_requests", "total_4xx_errors", "total_5xx_errors", "p50_latency", "p90_latency", "p99_latency", "total_prompt_tokens", "total_completion_tokens", "total_embedding_tokens", "total_tokens", "total_rerank_tokens")
    TOTAL_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_4XX_ERRORS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_5XX_ERRORS_FIELD_NUMBER: _ClassVar[int]
    P50_LATENCY_FIELD_NUMBER: _ClassVar[int]
    P90_LATENCY_FIELD_NUMBER: _ClassVar[int]
    P99_LATENCY_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_EMBEDDING_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_RERANK_TOKENS_FIELD_NUMBER: _ClassVar[int]
    total_requests: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    total_4xx_errors: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    total_5xx_errors: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    p50_latency: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    p90_latency: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    p99_latency: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    total_prompt_tokens: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    total_completion_tokens: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    total_embedding_tokens: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    total_tokens: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    total_rerank_tokens: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    def __init__(self, total_requests: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., total_4xx_errors: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., total_5xx_errors: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., p50_latency: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., p90_latency: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., p99_latency: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., total_prompt_tokens: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., total_completion_tokens: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., total_embedding_tokens: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., total_tokens: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., total_rerank_tokens: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ...) -> None: ...

class NodeModelCacheUsage(_message.Message):
    __slots__ = ("node_name", "cache_path", "capacity_bytes", "used_bytes", "available_bytes", "models")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    CACHE_PATH_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    cache_path: str
    capacity_bytes: int
    used_bytes: int
    available_bytes: int
    models: _containers.RepeatedCompositeFieldContainer[CachedModelUsage]
    def __init__(self, node_name: _Optional[str] = ..., cache_path: _Optional[str] = ..., capacity_bytes: _Optional[int] = ..., used_bytes: _Optional[int] = ..., available_bytes: _Optional[int] = ..., models: _Optional[_Iterable[_Union[CachedModelUsage, _Mapping]]] = ...) -> None: ...

class CachedModelUsage(_message.Message):
    __slots__ = ("model_url", "display_name", "size_bytes", "deployment_names")
    MODEL_URL_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_NAMES_FIELD_NUMBER: _ClassVar[int]
    model_url: str
    display_name: str
    size_bytes: int
    deployment_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, model_url: _Optional[str] = ..., display_name: _Optional[str] = ..., size_bytes: _Optional[int] = ..., deployment_names: _Optional[_Iterable[str]] = ...) -> None: ...
