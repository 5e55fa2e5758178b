import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from gen.platform.metering.v1 import usage_pb2 as _usage_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetPlatformTokenUsageSeriesRequest(_message.Message):
    __slots__ = ("window", "step", "tenant_ids", "group_by", "model_ids", "user_ids")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TENANT_IDS_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    MODEL_IDS_FIELD_NUMBER: _ClassVar[int]
    USER_IDS_FIELD_NUMBER: _ClassVar[int]
    window: _usage_pb2.TimeWindow
    step: _duration_pb2.Duration
    tenant_ids: _containers.RepeatedScalarFieldContainer[str]
    group_by: _usage_pb2.TokenUsageGroupBy
    model_ids: _containers.RepeatedScalarFieldContainer[str]
    user_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, window: _Optional[_Union[_usage_pb2.TimeWindow, _Mapping]] = ..., step: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., tenant_ids: _Optional[_Iterable[str]] = ..., group_by: _Optional[_Union[_usage_pb2.TokenUsageGroupBy, str]] = ..., model_ids: _Optional[_Iterable[str]] = ..., user_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetPlatformTokenUsageSeriesResponse(_message.Message):
    __slots__ = ("series",)
    SERIES_FIELD_NUMBER: _ClassVar[int]
    series: _containers.RepeatedCompositeFieldContainer[_usage_pb2.TokenUsageSeries]
    def __init__(self, series: _Optional[_Iterable[_Union[_usage_pb2.TokenUsageSeries, _Mapping]]] = ...) -> None: ...

class GetPlatformCallCountSeriesRequest(_message.Message):
    __slots__ = ("window", "step", "tenant_ids", "kind", "group_by", "resource_ids", "user_ids")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TENANT_IDS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_IDS_FIELD_NUMBER: _ClassVar[int]
    USER_IDS_FIELD_NUMBER: _ClassVar[int]
    window: _usage_pb2.TimeWindow
    step: _duration_pb2.Duration
    tenant_ids: _containers.RepeatedScalarFieldContainer[str]
    kind: _usage_pb2.CallKind
    group_by: _usage_pb2.CallGroupBy
    resource_ids: _containers.RepeatedScalarFieldContainer[str]
    user_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, window: _Optional[_Union[_usage_pb2.TimeWindow, _Mapping]] = ..., step: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., tenant_ids: _Optional[_Iterable[str]] = ..., kind: _Optional[_Union[_usage_pb2.CallKind, str]] = ..., group_by: _Optional[_Union[_usage_pb2.CallGroupBy, str]] = ..., resource_ids: _Optional[_Iterable[str]] = ..., user_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetPlatformCallCountSeriesResponse(_message.Message):
    __slots__ = ("series",)
    SERIES_FIELD_NUMBER: _ClassVar[int]
    series: _containers.RepeatedCompositeFieldContainer[_usage_pb2.CallCountSeries]
    def __init__(self, series: _Optional[_Iterable[_Union[_usage_pb2.CallCountSeries, _Mapping]]] = ...) -> None: ...

class ListPlatformTokenUsageRequest(_message.Message):
    __slots__ = ("window", "group_by", "limit", "tenant_ids", "model_ids", "user_ids")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    TENANT_IDS_FIELD_NUMBER: _ClassVar[int]
    MODEL_IDS_FIELD_NUMBER: _ClassVar[int]
    USER_IDS_FIELD_NUMBER: _ClassVar[int]
    window: _usage_pb2.TimeWindow
    group_by: _usage_pb2.TokenUsageGroupBy
    limit: int
    tenant_ids: _containers.RepeatedScalarFieldContainer[str]
    model_ids: _containers.RepeatedScalarFieldContainer[str]
    user_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, window: _Optional[_Union[_usage_pb2.TimeWindow, _Mapping]] = ..., group_by: _Optional[_Union[_usage_pb2.TokenUsageGroupBy, str]] = ..., limit: _Optional[int] = ..., tenant_ids: _Optional[_Iterable[str]] = ..., model_ids: _Optional[_Iterable[str]] = ..., user_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ListPlatformTokenUsageResponse(_message.Message):
    __slots__ = ("window", "groups")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    window: _usage_pb2.TimeWindow
    groups: _containers.RepeatedCompositeFieldContainer[_usage_pb2.TokenUsageGroup]
    def __init__(self, window: _Optional[_Union[_usage_pb2.TimeWindow, _Mapping]] = ..., groups: _Optional[_Iterable[_Union[_usage_pb2.TokenUsageGroup, _Mapping]]] = ...) -> None: ...

class GetPlatformApiTrafficSeriesRequest(_message.Message):
    __slots__ = ("window", "step", "service")
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    window: _usage_pb2.TimeWindow
    step: _duration_pb2.Duration
    service: str
    def __init__(self, window: _Optional[_Union[_usage_pb2.TimeWindow, _Mapping]] = ..., step: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., service: _Optional[str] = ...) -> None: ...

class GetPlatformApiTrafficSeriesResponse(_message.Message):
    __slots__ = ("series", "services")
    SERIES_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    series: _containers.RepeatedCompositeFieldContainer[_usage_pb2.ApiTrafficSeries]
    services: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, series: _Optional[_Iterable[_Union[_usage_pb2.ApiTrafficSeries, _Mapping]]] = ..., services: _Optional[_Iterable[str]] = ...) -> None: ...
