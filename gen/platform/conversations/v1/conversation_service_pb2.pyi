from gen.platform.conversations.v1 import conversation_pb2 as _conversation_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateConversationRequest(_message.Message):
    __slots__ = ("tenant_id", "metadata", "items")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    metadata: _containers.ScalarMap[str, str]
    items: _containers.RepeatedCompositeFieldContainer[_conversation_pb2.ConversationItem]
    def __init__(self, tenant_id: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., items: _Optional[_Iterable[_Union[_conversation_pb2.ConversationItem, _Mapping]]] = ...) -> None: ...

class CreateConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: _conversation_pb2.Conversation
    def __init__(self, conversation: _Optional[_Union[_conversation_pb2.Conversation, _Mapping]] = ...) -> None: ...

class GetConversationRequest(_message.Message):
    __slots__ = ("conversation_id", "tenant_id")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    tenant_id: str
    def __init__(self, conversation_id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class GetConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: _conversation_pb2.Conversation
    def __init__(self, conversation: _Optional[_Union[_conversation_pb2.Conversation, _Mapping]] = ...) -> None: ...

class UpdateConversationRequest(_message.Message):
    __slots__ = ("conversation_id", "tenant_id", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    tenant_id: str
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, conversation_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class UpdateConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: _conversation_pb2.Conversation
    def __init__(self, conversation: _Optional[_Union[_conversation_pb2.Conversation, _Mapping]] = ...) -> None: ...

class DeleteConversationRequest(_message.Message):
    __slots__ = ("conversation_id", "tenant_id")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    tenant_id: str
    def __init__(self, conversation_id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class DeleteConversationResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListConversationsRequest(_message.Message):
    __slots__ = ("tenant_id", "after", "limit", "order")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    after: str
    limit: int
    order: _conversation_pb2.SortOrder
    def __init__(self, tenant_id: _Optional[str] = ..., after: _Optional[str] = ..., limit: _Optional[int] = ..., order: _Optional[_Union[_conversation_pb2.SortOrder, str]] = ...) -> None: ...

class ListConversationsResponse(_message.Message):
    __slots__ = ("conversations", "first_id", "last_id", "has_more")
    CONVERSATIONS_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    conversations: _containers.RepeatedCompositeFieldContainer[_conversation_pb2.Conversation]
    first_id: str
    last_id: str
    has_more: bool
    def __init__(self, conversations: _Optional[_Iterable[_Union[_conversation_pb2.Conversation, _Mapping]]] = ..., first_id: _Optional[str] = ..., last_id: _Optional[str] = ..., has_more: _Optional[bool] = ...) -> None: ...
