from gen.platform.modelmanager.v1 import capabilities_pb2 as _capabilities_pb2
from gen.platform.modelmanager.v1 import metrics_pb2 as _metrics_pb2
from gen.platform.modelmanager.v1 import sharing_pb2 as _sharing_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExternalModelProvider(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXTERNAL_MODEL_PROVIDER_UNSPECIFIED: _ClassVar[ExternalModelProvider]
    EXTERNAL_MODEL_PROVIDER_VENDOR_A: _ClassVar[ExternalModelProvider]
    EXTERNAL_MODEL_PROVIDER_VENDOR_B: _ClassVar[ExternalModelProvider]
    EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE: _ClassVar[ExternalModelProvider]
EXTERNAL_MODEL_PROVIDER_UNSPECIFIED: ExternalModelProvider
EXTERNAL_MODEL_PROVIDER_VENDOR_A: ExternalModelProvider
EXTERNAL_MODEL_PROVIDER_VENDOR_B: ExternalModelProvider
EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE: ExternalModelProvider

class ExternalModel(_message.Message):
    __slots__ = ("name", "provider", "provider_model_id", "api_key", "base_url", "api_version", "sharing", "public_model_id", "display_name", "capabilities", "query_prefix")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    SHARING_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    QUERY_PREFIX_FIELD_NUMBER: _ClassVar[int]
    name: str
    provider: ExternalModelProvider
    provider_model_id: str
    api_key: str
    base_url: str
    api_version: str
    sharing: _sharing_pb2.Sharing
    public_model_id: str
    display_name: str
    capabilities: _capabilities_pb2.ModelCapabilities
    query_prefix: str
    def __init__(self, name: _Optional[str] = ..., provider: _Optional[_Union[ExternalModelProvider, str]] = ..., provider_model_id: _Optional[str] = ..., api_key: _Optional[str] = ..., base_url: _Optional[str] = ..., api_version: _Optional[str] = ..., sharing: _Optional[_Union[_sharing_pb2.Sharing, _Mapping]] = ..., public_model_id: _Optional[str] = ..., display_name: _Optional[str] = ..., capabilities: _Optional[_Union[_capabilities_pb2.ModelCapabilities, _Mapping]] = ..., query_prefix: _Optional[str] = ...) -> None: ...

class ExternalModelSummary(_message.Message):
    __slots__ = ("name", "display_name", "public_model_id", "provider_model_id", "provider", "share_to_all", "capabilities", "tenant_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    SHARE_TO_ALL_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    display_name: str
    public_model_id: str
    provider_model_id: str
    provider: ExternalModelProvider
    share_to_all: bool
    capabilities: _capabilities_pb2.ModelCapabilities
    tenant_id: str
    def __init__(self, name: _Optional[str] = ..., display_name: _Optional[str] = ..., public_model_id: _Optional[str] = ..., provider_model_id: _Optional[str] = ..., provider: _Optional[_Union[ExternalModelProvider, str]] = ..., share_to_all: _Optional[bool] = ..., capabilities: _Optional[_Union[_capabilities_pb2.ModelCapabilities, _Mapping]] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class ExternalModelMetrics(_message.Message):
    __slots__ = ("total_prompt_tokens", "total_completion_tokens", "total_embedding_tokens", "total_rerank_tokens", "total_tokens")
    TOTAL_PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_EMBEDDING_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_RERANK_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    total_prompt_tokens: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    total_completion_tokens: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    total_embedding_tokens: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    total_rerank_tokens: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    total_tokens: _containers.RepeatedCompositeFieldContainer[_metrics_pb2.MetricPoint]
    def __init__(self, total_prompt_tokens: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., total_completion_tokens: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., total_embedding_tokens: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., total_rerank_tokens: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ..., total_tokens: _Optional[_Iterable[_Union[_metrics_pb2.MetricPoint, _Mapping]]] = ...) -> None: ...
