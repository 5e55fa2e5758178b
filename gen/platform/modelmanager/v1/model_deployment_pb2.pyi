import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from gen.platform.modelmanager.v1 import capabilities_pb2 as _capabilities_pb2
from gen.platform.modelmanager.v1 import sharing_pb2 as _sharing_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ModelDeployment(_message.Message):
    __slots__ = ("name", "public_model_id", "display_name", "endpoint_url", "served_model_id", "capabilities", "runtime_info", "sharing", "create_time", "query_prefix", "model_url")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_URL_FIELD_NUMBER: _ClassVar[int]
    SERVED_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_INFO_FIELD_NUMBER: _ClassVar[int]
    SHARING_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    QUERY_PREFIX_FIELD_NUMBER: _ClassVar[int]
    MODEL_URL_FIELD_NUMBER: _ClassVar[int]
    name: str
    public_model_id: str
    display_name: str
    endpoint_url: str
    served_model_id: str
    capabilities: _capabilities_pb2.ModelCapabilities
    runtime_info: ModelRuntimeInfo
    sharing: _sharing_pb2.Sharing
    create_time: _timestamp_pb2.Timestamp
    query_prefix: str
    model_url: str
    def __init__(self, name: _Optional[str] = ..., public_model_id: _Optional[str] = ..., display_name: _Optional[str] = ..., endpoint_url: _Optional[str] = ..., served_model_id: _Optional[str] = ..., capabilities: _Optional[_Union[_capabilities_pb2.ModelCapabilities, _Mapping]] = ..., runtime_info: _Optional[_Union[ModelRuntimeInfo, _Mapping]] = ..., sharing: _Optional[_Union[_sharing_pb2.Sharing, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., query_prefix: _Optional[str] = ..., model_url: _Optional[str] = ...) -> None: ...

class ModelRuntimeInfo(_message.Message):
    __slots__ = ("max_model_len",)
    MAX_MODEL_LEN_FIELD_NUMBER: _ClassVar[int]
    max_model_len: int
    def __init__(self, max_model_len: _Optional[int] = ...) -> None: ...
