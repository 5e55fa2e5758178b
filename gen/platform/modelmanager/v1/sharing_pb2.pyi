from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class Sharing(_message.Message):
    __slots__ = ("share_to_all", "shared_with")
    SHARE_TO_ALL_FIELD_NUMBER: _ClassVar[int]
    SHARED_WITH_FIELD_NUMBER: _ClassVar[int]
    share_to_all: bool
    shared_with: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, share_to_all: _Optional[bool] = ..., shared_with: _Optional[_Iterable[str]] = ...) -> None: ...
