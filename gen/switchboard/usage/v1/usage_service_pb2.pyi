import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from gen.platform.metering.v1 import usage_pb2 as _usage_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Bucket(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUCKET_UNSPECIFIED: _ClassVar[Bucket]
    BUCKET_HOUR: _ClassVar[Bucket]
    BUCKET_DAY: _ClassVar[Bucket]

class GroupBy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GROUP_BY_UNSPECIFIED: _ClassVar[GroupBy]
    GROUP_BY_NONE: _ClassVar[GroupBy]
    GROUP_BY_MODEL: _ClassVar[GroupBy]
    GROUP_BY_API_KEY: _ClassVar[GroupBy]
    GROUP_BY_CALL_KIND: _ClassVar[GroupBy]
    GROUP_BY_TENANT: _ClassVar[GroupBy]
BUCKET_UNSPECIFIED: Bucket
BUCKET_HOUR: Bucket
BUCKET_DAY: Bucket
GROUP_BY_UNSPECIFIED: GroupBy
GROUP_BY_NONE: GroupBy
GROUP_BY_MODEL: GroupBy
GROUP_BY_API_KEY: GroupBy
GROUP_BY_CALL_KIND: GroupBy
GROUP_BY_TENANT: GroupBy

class UsageFilter(_message.Message):
    __slots__ = ("model_ids", "api_key_ids", "call_kinds")
    MODEL_IDS_FIELD_NUMBER: _ClassVar[int]
    API_KEY_IDS_FIELD_NUMBER: _ClassVar[int]
    CALL_KINDS_FIELD_NUMBER: _ClassVar[int]
    model_ids: _containers.RepeatedScalarFieldContainer[str]
    api_key_ids: _containers.RepeatedScalarFieldContainer[str]
    call_kinds: _containers.RepeatedScalarFieldContainer[_usage_pb2.CallKind]
    def __init__(self, model_ids: _Optional[_Iterable[str]] = ..., api_key_ids: _Optional[_Iterable[str]] = ..., call_kinds: _Optional[_Iterable[_Union[_usage_pb2.CallKind, str]]] = ...) -> None: ...

class UsageTotals(_message.Message):
    __slots__ = ("requests", "errors", "input_tokens", "output_tokens", "total_tokens")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    requests: int
    errors: int
    input_tokens: int
    output_tokens: int
    total_tokens: int
    def __init__(self, requests: _Optional[int] = ..., errors: _Optional[int] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ...) -> None: ...

class UsageGroup(_message.Message):
    __slots__ = ("id", "display_name", "other", "tenant_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    OTHER_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    display_name: str
    other: bool
    tenant_id: str
    def __init__(self, id: _Optional[str] = ..., display_name: _Optional[str] = ..., other: _Optional[bool] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class GetUsageSeriesRequest(_message.Message):
    __slots__ = ("tenant_id", "start_time", "end_time", "bucket", "group_by", "limit", "filter")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    bucket: Bucket
    group_by: GroupBy
    limit: int
    filter: UsageFilter
    def __init__(self, tenant_id: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., bucket: _Optional[_Union[Bucket, str]] = ..., group_by: _Optional[_Union[GroupBy, str]] = ..., limit: _Optional[int] = ..., filter: _Optional[_Union[UsageFilter, _Mapping]] = ...) -> None: ...

class UsageSeries(_message.Message):
    __slots__ = ("group", "totals", "requests", "errors", "input_tokens", "output_tokens", "total_tokens")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    group: UsageGroup
    totals: UsageTotals
    requests: _containers.RepeatedScalarFieldContainer[int]
    errors: _containers.RepeatedScalarFieldContainer[int]
    input_tokens: _containers.RepeatedScalarFieldContainer[int]
    output_tokens: _containers.RepeatedScalarFieldContainer[int]
    total_tokens: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, group: _Optional[_Union[UsageGroup, _Mapping]] = ..., totals: _Optional[_Union[UsageTotals, _Mapping]] = ..., requests: _Optional[_Iterable[int]] = ..., errors: _Optional[_Iterable[int]] = ..., input_tokens: _Optional[_Iterable[int]] = ..., output_tokens: _Optional[_Iterable[int]] = ..., total_tokens: _Optional[_Iterable[int]] = ...) -> None: ...

class GetUsageSeriesResponse(_message.Message):
    __slots__ = ("start_time", "end_time", "bucket", "bucket_starts", "series", "totals")
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    BUCKET_STARTS_FIELD_NUMBER: _ClassVar[int]
    SERIES_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    bucket: Bucket
    bucket_starts: _containers.RepeatedCompositeFieldContainer[_timestamp_pb2.Timestamp]
    series: _containers.RepeatedCompositeFieldContainer[UsageSeries]
    totals: UsageTotals
    def __init__(self, start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., bucket: _Optional[_Union[Bucket, str]] = ..., bucket_starts: _Optional[_Iterable[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]]] = ..., series: _Optional[_Iterable[_Union[UsageSeries, _Mapping]]] = ..., totals: _Optional[_Union[UsageTotals, _Mapping]] = ...) -> None: ...

class ListTopUsageRequest(_message.Message):
    __slots__ = ("tenant_id", "start_time", "end_time", "group_by", "limit", "filter")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    group_by: GroupBy
    limit: int
    filter: UsageFilter
    def __init__(self, tenant_id: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., group_by: _Optional[_Union[GroupBy, str]] = ..., limit: _Optional[int] = ..., filter: _Optional[_Union[UsageFilter, _Mapping]] = ...) -> None: ...

class UsageRank(_message.Message):
    __slots__ = ("group", "totals")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    group: UsageGroup
    totals: UsageTotals
    def __init__(self, group: _Optional[_Union[UsageGroup, _Mapping]] = ..., totals: _Optional[_Union[UsageTotals, _Mapping]] = ...) -> None: ...

class ListTopUsageResponse(_message.Message):
    __slots__ = ("start_time", "end_time", "ranks", "totals")
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    RANKS_FIELD_NUMBER: _ClassVar[int]
    TOTALS_FIELD_NUMBER: _ClassVar[int]
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    ranks: _containers.RepeatedCompositeFieldContainer[UsageRank]
    totals: UsageTotals
    def __init__(self, start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ranks: _Optional[_Iterable[_Union[UsageRank, _Mapping]]] = ..., totals: _Optional[_Union[UsageTotals, _Mapping]] = ...) -> None: ...
