from gen.platform.modelmanager.v1 import model_alias_pb2 as _model_alias_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateModelAliasRequest(_message.Message):
    __slots__ = ("alias",)
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    alias: _model_alias_pb2.ModelAlias
    def __init__(self, alias: _Optional[_Union[_model_alias_pb2.ModelAlias, _Mapping]] = ...) -> None: ...

class CreateModelAliasResponse(_message.Message):
    __slots__ = ("name", "alias")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    alias: _model_alias_pb2.ModelAlias
    def __init__(self, name: _Optional[str] = ..., alias: _Optional[_Union[_model_alias_pb2.ModelAlias, _Mapping]] = ...) -> None: ...

class GetModelAliasRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetModelAliasResponse(_message.Message):
    __slots__ = ("name", "alias")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    alias: _model_alias_pb2.ModelAlias
    def __init__(self, name: _Optional[str] = ..., alias: _Optional[_Union[_model_alias_pb2.ModelAlias, _Mapping]] = ...) -> None: ...

class UpdateModelAliasRequest(_message.Message):
    __slots__ = ("name", "alias")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    alias: _model_alias_pb2.ModelAlias
    def __init__(self, name: _Optional[str] = ..., alias: _Optional[_Union[_model_alias_pb2.ModelAlias, _Mapping]] = ...) -> None: ...

class UpdateModelAliasResponse(_message.Message):
    __slots__ = ("name", "alias")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    alias: _model_alias_pb2.ModelAlias
    def __init__(self, name: _Optional[str] = ..., alias: _Optional[_Union[_model_alias_pb2.ModelAlias, _Mapping]] = ...) -> None: ...

class DeleteModelAliasRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteModelAliasResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListModelAliasesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListModelAliasesResponse(_message.Message):
    __slots__ = ("aliases",)
    class Item(_message.Message):
        __slots__ = ("name", "alias")
        NAME_FIELD_NUMBER: _ClassVar[int]
        ALIAS_FIELD_NUMBER: _ClassVar[int]
        name: str
        alias: _model_alias_pb2.ModelAlias
        def __init__(self, name: _Optional[str] = ..., alias: _Optional[_Union[_model_alias_pb2.ModelAlias, _Mapping]] = ...) -> None: ...
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    aliases: _containers.RepeatedCompositeFieldContainer[ListModelAliasesResponse.Item]
    def __init__(self, aliases: _Optional[_Iterable[_Union[ListModelAliasesResponse.Item, _Mapping]]] = ...) -> None: ...
