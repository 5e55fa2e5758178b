from gen.platform.tenants.v1 import group_pb2 as _group_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateGroupRequest(_message.Message):
    __slots__ = ("tenant_id", "name")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    name: str
    def __init__(self, tenant_id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class CreateGroupResponse(_message.Message):
    __slots__ = ("group",)
    GROUP_FIELD_NUMBER: _ClassVar[int]
    group: _group_pb2.Group
    def __init__(self, group: _Optional[_Union[_group_pb2.Group, _Mapping]] = ...) -> None: ...

class ListGroupsRequest(_message.Message):
    __slots__ = ("tenant_id", "api_key_attachable")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ATTACHABLE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    api_key_attachable: bool
    def __init__(self, tenant_id: _Optional[str] = ..., api_key_attachable: _Optional[bool] = ...) -> None: ...

class ListGroupsResponse(_message.Message):
    __slots__ = ("groups",)
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[_group_pb2.Group]
    def __init__(self, groups: _Optional[_Iterable[_Union[_group_pb2.Group, _Mapping]]] = ...) -> None: ...

class DeleteGroupRequest(_message.Message):
    __slots__ = ("tenant_id", "group_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    group_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., group_id: _Optional[str] = ...) -> None: ...

class DeleteGroupResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListGroupMembersRequest(_message.Message):
    __slots__ = ("tenant_id", "group_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    group_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., group_id: _Optional[str] = ...) -> None: ...

class ListGroupMembersResponse(_message.Message):
    __slots__ = ("members",)
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[_group_pb2.GroupMember]
    def __init__(self, members: _Optional[_Iterable[_Union[_group_pb2.GroupMember, _Mapping]]] = ...) -> None: ...

class AddGroupMemberRequest(_message.Message):
    __slots__ = ("tenant_id", "group_id", "user_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    group_id: str
    user_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., group_id: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class AddGroupMemberResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemoveGroupMemberRequest(_message.Message):
    __slots__ = ("tenant_id", "group_id", "user_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    group_id: str
    user_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., group_id: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class RemoveGroupMemberResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
