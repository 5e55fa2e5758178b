from gen.platform.tenants.v1 import user_pb2 as _user_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Group(_message.Message):
    __slots__ = ("id", "tenant_id", "name", "member_count")
    ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MEMBER_COUNT_FIELD_NUMBER: _ClassVar[int]
    id: str
    tenant_id: str
    name: str
    member_count: int
    def __init__(self, id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., name: _Optional[str] = ..., member_count: _Optional[int] = ...) -> None: ...

class GroupMember(_message.Message):
    __slots__ = ("user_id", "metadata")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    metadata: _user_pb2.UserMetadata
    def __init__(self, user_id: _Optional[str] = ..., metadata: _Optional[_Union[_user_pb2.UserMetadata, _Mapping]] = ...) -> None: ...
