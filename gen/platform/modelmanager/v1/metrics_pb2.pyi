from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MetricsStep(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    METRICS_STEP_UNSPECIFIED: _ClassVar[MetricsStep]
    METRICS_STEP_1M: _ClassVar[MetricsStep]
    METRICS_STEP_5M: _ClassVar[MetricsStep]
    METRICS_STEP_15M: _ClassVar[MetricsStep]
    METRICS_STEP_30M: _ClassVar[MetricsStep]
    METRICS_STEP_1H: _ClassVar[MetricsStep]
    METRICS_STEP_2H: _ClassVar[MetricsStep]
    METRICS_STEP_6H: _ClassVar[MetricsStep]
    METRICS_STEP_12H: _ClassVar[MetricsStep]
    METRICS_STEP_1D: _ClassVar[MetricsStep]
METRICS_STEP_UNSPECIFIED: MetricsStep
METRICS_STEP_1M: MetricsStep
METRICS_STEP_5M: MetricsStep
METRICS_STEP_15M: MetricsStep
METRICS_STEP_30M: MetricsStep
METRICS_STEP_1H: MetricsStep
METRICS_STEP_2H: MetricsStep
METRICS_STEP_6H: MetricsStep
METRICS_STEP_12H: MetricsStep
METRICS_STEP_1D: MetricsStep

class MetricsTimeRange(_message.Message):
    __slots__ = ("start", "end", "step")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    start: int
    end: int
    step: MetricsStep
    def __init__(self, start: _Optional[int] = ..., end: _Optional[int] = ..., step: _Optional[_Union[MetricsStep, str]] = ...) -> None: ...

class MetricPoint(_message.Message):
    __slots__ = ("timestamp", "value")
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    timestamp: int
    value: float
    def __init__(self, timestamp: _Optional[int] = ..., value: _Optional[float] = ...) -> None: ...
