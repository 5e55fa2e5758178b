from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SubjectType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUBJECT_TYPE_UNSPECIFIED: _ClassVar[SubjectType]
    SUBJECT_TYPE_USER: _ClassVar[SubjectType]
    SUBJECT_TYPE_GROUP: _ClassVar[SubjectType]
    SUBJECT_TYPE_SERVICE_ACCOUNT: _ClassVar[SubjectType]
    SUBJECT_TYPE_TENANT: _ClassVar[SubjectType]
    SUBJECT_TYPE_API_KEY: _ClassVar[SubjectType]

class DeploymentRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEPLOYMENT_ROLE_UNSPECIFIED: _ClassVar[DeploymentRole]
    DEPLOYMENT_ROLE_READER: _ClassVar[DeploymentRole]
    DEPLOYMENT_ROLE_ADMIN: _ClassVar[DeploymentRole]
SUBJECT_TYPE_UNSPECIFIED: SubjectType
SUBJECT_TYPE_USER: SubjectType
SUBJECT_TYPE_GROUP: SubjectType
SUBJECT_TYPE_SERVICE_ACCOUNT: SubjectType
SUBJECT_TYPE_TENANT: SubjectType
SUBJECT_TYPE_API_KEY: SubjectType
DEPLOYMENT_ROLE_UNSPECIFIED: DeploymentRole
DEPLOYMENT_ROLE_READER: DeploymentRole
DEPLOYMENT_ROLE_ADMIN: DeploymentRole

class Subject(_message.Message):
    __slots__ = ("type", "id")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    type: SubjectType
    id: str
    def __init__(self, type: _Optional[_Union[SubjectType, str]] = ..., id: _Optional[str] = ...) -> None: ...

class DeploymentPermission(_message.Message):
    __slots__ = ("subject", "role")
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    subject: Subject
    role: DeploymentRole
    def __init__(self, subject: _Optional[_Union[Subject, _Mapping]] = ..., role: _Optional[_Union[DeploymentRole, str]] = ...) -> None: ...
