from gen.platform.modelmanager.v1 import sharing_pb2 as _sharing_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ModelAliasTargetKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODEL_ALIAS_TARGET_KIND_UNSPECIFIED: _ClassVar[ModelAliasTargetKind]
    MODEL_ALIAS_TARGET_KIND_MODEL_DEPLOYMENT: _ClassVar[ModelAliasTargetKind]
    MODEL_ALIAS_TARGET_KIND_EXTERNAL_MODEL: _ClassVar[ModelAliasTargetKind]
MODEL_ALIAS_TARGET_KIND_UNSPECIFIED: ModelAliasTargetKind
MODEL_ALIAS_TARGET_KIND_MODEL_DEPLOYMENT: ModelAliasTargetKind
MODEL_ALIAS_TARGET_KIND_EXTERNAL_MODEL: ModelAliasTargetKind

class ModelAliasTargetRef(_message.Message):
    __slots__ = ("kind", "name")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    kind: ModelAliasTargetKind
    name: str
    def __init__(self, kind: _Optional[_Union[ModelAliasTargetKind, str]] = ..., name: _Optional[str] = ...) -> None: ...

class ModelAlias(_message.Message):
    __slots__ = ("public_model_id", "display_name", "target_ref", "unlisted", "sharing", "target_unresolved")
    PUBLIC_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_REF_FIELD_NUMBER: _ClassVar[int]
    UNLISTED_FIELD_NUMBER: _ClassVar[int]
    SHARING_FIELD_NUMBER: _ClassVar[int]
    TARGET_UNRESOLVED_FIELD_NUMBER: _ClassVar[int]
    public_model_id: str
    display_name: str
    target_ref: ModelAliasTargetRef
    unlisted: bool
    sharing: _sharing_pb2.Sharing
    target_unresolved: bool
    def __init__(self, public_model_id: _Optional[str] = ..., display_name: _Optional[str] = ..., target_ref: _Optional[_Union[ModelAliasTargetRef, _Mapping]] = ..., unlisted: _Optional[bool] = ..., sharing: _Optional[_Union[_sharing_pb2.Sharing, _Mapping]] = ..., target_unresolved: _Optional[bool] = ...) -> None: ...
