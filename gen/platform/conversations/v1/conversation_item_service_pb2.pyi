from gen.platform.conversations.v1 import conversation_pb2 as _conversation_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateItemsRequest(_message.Message):
    __slots__ = ("conversation_id", "tenant_id", "items")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    tenant_id: str
    items: _containers.RepeatedCompositeFieldContainer[_conversation_pb2.ConversationItem]
    def __init__(self, conversation_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., items: _Optional[_Iterable[_Union[_conversation_pb2.ConversationItem, _Mapping]]] = ...) -> None: ...

class CreateItemsResponse(_message.Message):
    __slots__ = ("items", "first_id", "has_more", "last_id")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[_conversation_pb2.ConversationItem]
    first_id: str
    has_more: bool
    last_id: str
    def __init__(self, items: _Optional[_Iterable[_Union[_conversation_pb2.ConversationItem, _Mapping]]] = ..., first_id: _Optional[str] = ..., has_more: _Optional[bool] = ..., last_id: _Optional[str] = ...) -> None: ...

class ListItemsRequest(_message.Message):
    __slots__ = ("conversation_id", "tenant_id", "after", "limit", "order")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    tenant_id: str
    after: str
    limit: int
    order: _conversation_pb2.SortOrder
    def __init__(self, conversation_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., after: _Optional[str] = ..., limit: _Optional[int] = ..., order: _Optional[_Union[_conversation_pb2.SortOrder, str]] = ...) -> None: ...

class ListItemsResponse(_message.Message):
    __slots__ = ("items", "first_id", "last_id", "has_more")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    FIRST_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[_conversation_pb2.ConversationItem]
    first_id: str
    last_id: str
    has_more: bool
    def __init__(self, items: _Optional[_Iterable[_Union[_conversation_pb2.ConversationItem, _Mapping]]] = ..., first_id: _Optional[str] = ..., last_id: _Optional[str] = ..., has_more: _Optional[bool] = ...) -> None: ...

class GetItemRequest(_message.Message):
    __slots__ = ("conversation_id", "item_id", "tenant_id")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    item_id: str
    tenant_id: str
    def __init__(self, conversation_id: _Optional[str] = ..., item_id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class GetItemResponse(_message.Message):
    __slots__ = ("item",)
    ITEM_FIELD_NUMBER: _ClassVar[int]
    item: _conversation_pb2.ConversationItem
    def __init__(self, item: _Optional[_Union[_conversation_pb2.ConversationItem, _Mapping]] = ...) -> None: ...

class DeleteItemRequest(_message.Message):
    __slots__ = ("conversation_id", "item_id", "tenant_id")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    item_id: str
    tenant_id: str
    def __init__(self, conversation_id: _Optional[str] = ..., item_id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class DeleteItemResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: _conversation_pb2.Conversation
    def __init__(self, conversation: _Optional[_Union[_conversation_pb2.Conversation, _Mapping]] = ...) -> None: ...

class TruncateConversationRequest(_message.Message):
    __slots__ = ("conversation_id", "from_item_id", "tenant_id")
    CONVERSATION_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_ITEM_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    conversation_id: str
    from_item_id: str
    tenant_id: str
    def __init__(self, conversation_id: _Optional[str] = ..., from_item_id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class TruncateConversationResponse(_message.Message):
    __slots__ = ("conversation",)
    CONVERSATION_FIELD_NUMBER: _ClassVar[int]
    conversation: _conversation_pb2.Conversation
    def __init__(self, conversation: _Optional[_Union[_conversation_pb2.Conversation, _Mapping]] = ...) -> None: ...
