import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ActorType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACTOR_TYPE_UNSPECIFIED: _ClassVar[ActorType]
    ACTOR_TYPE_ANONYMOUS: _ClassVar[ActorType]
    ACTOR_TYPE_USER: _ClassVar[ActorType]
    ACTOR_TYPE_API_KEY: _ClassVar[ActorType]

class Source(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SOURCE_UNSPECIFIED: _ClassVar[Source]
    SOURCE_MANAGEMENT: _ClassVar[Source]
    SOURCE_GATEWAY: _ClassVar[Source]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_ALLOWED: _ClassVar[Outcome]
    OUTCOME_REFUSED: _ClassVar[Outcome]
    OUTCOME_FAILED: _ClassVar[Outcome]
ACTOR_TYPE_UNSPECIFIED: ActorType
ACTOR_TYPE_ANONYMOUS: ActorType
ACTOR_TYPE_USER: ActorType
ACTOR_TYPE_API_KEY: ActorType
SOURCE_UNSPECIFIED: Source
SOURCE_MANAGEMENT: Source
SOURCE_GATEWAY: Source
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_ALLOWED: Outcome
OUTCOME_REFUSED: Outcome
OUTCOME_FAILED: Outcome

class AuditEvent(_message.Message):
    __slots__ = ("id", "time", "tenant_id", "actor", "peer_address", "source", "method", "resource_kind", "resource_name", "outcome", "code")
    ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    PEER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_KIND_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    id: str
    time: _timestamp_pb2.Timestamp
    tenant_id: str
    actor: Actor
    peer_address: str
    source: Source
    method: str
    resource_kind: str
    resource_name: str
    outcome: Outcome
    code: str
    def __init__(self, id: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tenant_id: _Optional[str] = ..., actor: _Optional[_Union[Actor, _Mapping]] = ..., peer_address: _Optional[str] = ..., source: _Optional[_Union[Source, str]] = ..., method: _Optional[str] = ..., resource_kind: _Optional[str] = ..., resource_name: _Optional[str] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., code: _Optional[str] = ...) -> None: ...

class Actor(_message.Message):
    __slots__ = ("type", "user_id", "service_account_id", "api_key_id")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    type: ActorType
    user_id: str
    service_account_id: str
    api_key_id: str
    def __init__(self, type: _Optional[_Union[ActorType, str]] = ..., user_id: _Optional[str] = ..., service_account_id: _Optional[str] = ..., api_key_id: _Optional[str] = ...) -> None: ...
