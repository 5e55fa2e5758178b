from gen.platform.modelmanager.v1 import sharing_pb2 as _sharing_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExternalMcpAuthType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXTERNAL_MCP_AUTH_TYPE_UNSPECIFIED: _ClassVar[ExternalMcpAuthType]
    EXTERNAL_MCP_AUTH_TYPE_NONE: _ClassVar[ExternalMcpAuthType]
    EXTERNAL_MCP_AUTH_TYPE_BEARER: _ClassVar[ExternalMcpAuthType]
    EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE: _ClassVar[ExternalMcpAuthType]
EXTERNAL_MCP_AUTH_TYPE_UNSPECIFIED: ExternalMcpAuthType
EXTERNAL_MCP_AUTH_TYPE_NONE: ExternalMcpAuthType
EXTERNAL_MCP_AUTH_TYPE_BEARER: ExternalMcpAuthType
EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE: ExternalMcpAuthType

class ExternalMcpServer(_message.Message):
    __slots__ = ("name", "server_url", "sharing", "display_name", "auth", "static_header_names")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_URL_FIELD_NUMBER: _ClassVar[int]
    SHARING_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    AUTH_FIELD_NUMBER: _ClassVar[int]
    STATIC_HEADER_NAMES_FIELD_NUMBER: _ClassVar[int]
    name: str
    server_url: str
    sharing: _sharing_pb2.Sharing
    display_name: str
    auth: ExternalMcpServerAuth
    static_header_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., server_url: _Optional[str] = ..., sharing: _Optional[_Union[_sharing_pb2.Sharing, _Mapping]] = ..., display_name: _Optional[str] = ..., auth: _Optional[_Union[ExternalMcpServerAuth, _Mapping]] = ..., static_header_names: _Optional[_Iterable[str]] = ...) -> None: ...

class ExternalMcpServerAuth(_message.Message):
    __slots__ = ("type", "oauth", "api_key_set")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    OAUTH_FIELD_NUMBER: _ClassVar[int]
    API_KEY_SET_FIELD_NUMBER: _ClassVar[int]
    type: ExternalMcpAuthType
    oauth: ExternalMcpOAuthConfig
    api_key_set: bool
    def __init__(self, type: _Optional[_Union[ExternalMcpAuthType, str]] = ..., oauth: _Optional[_Union[ExternalMcpOAuthConfig, _Mapping]] = ..., api_key_set: _Optional[bool] = ...) -> None: ...

class ExternalMcpOAuthConfig(_message.Message):
    __slots__ = ("authorization_url", "token_url", "issuer_url", "client_id", "scopes", "resource", "authorization_parameters", "token_endpoint_auth_method", "client_secret_set")
    class AuthorizationParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AUTHORIZATION_URL_FIELD_NUMBER: _ClassVar[int]
    TOKEN_URL_FIELD_NUMBER: _ClassVar[int]
    ISSUER_URL_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZATION_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ENDPOINT_AUTH_METHOD_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SECRET_SET_FIELD_NUMBER: _ClassVar[int]
    authorization_url: str
    token_url: str
    issuer_url: str
    client_id: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    resource: str
    authorization_parameters: _containers.ScalarMap[str, str]
    token_endpoint_auth_method: str
    client_secret_set: bool
    def __init__(self, authorization_url: _Optional[str] = ..., token_url: _Optional[str] = ..., issuer_url: _Optional[str] = ..., client_id: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., resource: _Optional[str] = ..., authorization_parameters: _Optional[_Mapping[str, str]] = ..., token_endpoint_auth_method: _Optional[str] = ..., client_secret_set: _Optional[bool] = ...) -> None: ...

class ExternalMcpStaticHeaderValue(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class ExternalMcpServerDiscovery(_message.Message):
    __slots__ = ("auth_type", "server_name", "dynamic_client_registration_supported")
    AUTH_TYPE_FIELD_NUMBER: _ClassVar[int]
    SERVER_NAME_FIELD_NUMBER: _ClassVar[int]
    DYNAMIC_CLIENT_REGISTRATION_SUPPORTED_FIELD_NUMBER: _ClassVar[int]
    auth_type: ExternalMcpAuthType
    server_name: str
    dynamic_client_registration_supported: bool
    def __init__(self, auth_type: _Optional[_Union[ExternalMcpAuthType, str]] = ..., server_name: _Optional[str] = ..., dynamic_client_registration_supported: _Optional[bool] = ...) -> None: ...

class ExternalMcpServerSummary(_message.Message):
    __slots__ = ("name", "display_name", "share_to_all", "tenant_id", "auth_type", "user_auth_required")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    SHARE_TO_ALL_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    AUTH_TYPE_FIELD_NUMBER: _ClassVar[int]
    USER_AUTH_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    name: str
    display_name: str
    share_to_all: bool
    tenant_id: str
    auth_type: ExternalMcpAuthType
    user_auth_required: bool
    def __init__(self, name: _Optional[str] = ..., display_name: _Optional[str] = ..., share_to_all: _Optional[bool] = ..., tenant_id: _Optional[str] = ..., auth_type: _Optional[_Union[ExternalMcpAuthType, str]] = ..., user_auth_required: _Optional[bool] = ...) -> None: ...
