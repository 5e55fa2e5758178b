from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TaskType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_TYPE_UNSPECIFIED: _ClassVar[TaskType]
    TASK_TYPE_TEXT_GENERATION: _ClassVar[TaskType]
    TASK_TYPE_EMBEDDING: _ClassVar[TaskType]
    TASK_TYPE_RERANK: _ClassVar[TaskType]
    TASK_TYPE_SPEECH_TO_TEXT: _ClassVar[TaskType]
    TASK_TYPE_GUARDRAIL: _ClassVar[TaskType]

class Modality(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODALITY_UNSPECIFIED: _ClassVar[Modality]
    MODALITY_TEXT: _ClassVar[Modality]
    MODALITY_IMAGE: _ClassVar[Modality]
    MODALITY_AUDIO: _ClassVar[Modality]
TASK_TYPE_UNSPECIFIED: TaskType
TASK_TYPE_TEXT_GENERATION: TaskType
TASK_TYPE_EMBEDDING: TaskType
TASK_TYPE_RERANK: TaskType
TASK_TYPE_SPEECH_TO_TEXT: TaskType
TASK_TYPE_GUARDRAIL: TaskType
MODALITY_UNSPECIFIED: Modality
MODALITY_TEXT: Modality
MODALITY_IMAGE: Modality
MODALITY_AUDIO: Modality

class ModelCapabilities(_message.Message):
    __slots__ = ("task_type", "input_modalities")
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    INPUT_MODALITIES_FIELD_NUMBER: _ClassVar[int]
    task_type: TaskType
    input_modalities: _containers.RepeatedScalarFieldContainer[Modality]
    def __init__(self, task_type: _Optional[_Union[TaskType, str]] = ..., input_modalities: _Optional[_Iterable[_Union[Modality, str]]] = ...) -> None: ...
