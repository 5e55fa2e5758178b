from gen.platform.agents.v1 import external_mcp_server_pb2 as _external_mcp_server_pb2
from gen.platform.modelmanager.v1 import permission_pb2 as _permission_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DiscoverExternalMcpServerRequest(_message.Message):
    __slots__ = ("server_url", "tenant_id")
    SERVER_URL_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    server_url: str
    tenant_id: str
    def __init__(self, server_url: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class DiscoverExternalMcpServerResponse(_message.Message):
    __slots__ = ("discovery",)
    DISCOVERY_FIELD_NUMBER: _ClassVar[int]
    discovery: _external_mcp_server_pb2.ExternalMcpServerDiscovery
    def __init__(self, discovery: _Optional[_Union[_external_mcp_server_pb2.ExternalMcpServerDiscovery, _Mapping]] = ...) -> None: ...

class DiscoverPlatformExternalMcpServerRequest(_message.Message):
    __slots__ = ("server_url",)
    SERVER_URL_FIELD_NUMBER: _ClassVar[int]
    server_url: str
    def __init__(self, server_url: _Optional[str] = ...) -> None: ...

class DiscoverPlatformExternalMcpServerResponse(_message.Message):
    __slots__ = ("discovery",)
    DISCOVERY_FIELD_NUMBER: _ClassVar[int]
    discovery: _external_mcp_server_pb2.ExternalMcpServerDiscovery
    def __init__(self, discovery: _Optional[_Union[_external_mcp_server_pb2.ExternalMcpServerDiscovery, _Mapping]] = ...) -> None: ...

class CreateExternalMcpServerRequest(_message.Message):
    __slots__ = ("external_mcp_server", "tenant_id", "api_key", "static_headers", "oauth_client_secret")
    EXTERNAL_MCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    STATIC_HEADERS_FIELD_NUMBER: _ClassVar[int]
    OAUTH_CLIENT_SECRET_FIELD_NUMBER: _ClassVar[int]
    external_mcp_server: _external_mcp_server_pb2.ExternalMcpServer
    tenant_id: str
    api_key: str
    static_headers: _containers.RepeatedCompositeFieldContainer[_external_mcp_server_pb2.ExternalMcpStaticHeaderValue]
    oauth_client_secret: str
    def __init__(self, external_mcp_server: _Optional[_Union[_external_mcp_server_pb2.ExternalMcpServer, _Mapping]] = ..., tenant_id: _Optional[str] = ..., api_key: _Optional[str] = ..., static_headers: _Optional[_Iterable[_Union[_external_mcp_server_pb2.ExternalMcpStaticHeaderValue, _Mapping]]] = ..., oauth_client_secret: _Optional[str] = ...) -> None: ...

class CreateExternalMcpServerResponse(_message.Message):
    __slots__ = ("external_mcp_server",)
    EXTERNAL_MCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    external_mcp_server: _external_mcp_server_pb2.ExternalMcpServer
    def __init__(self, external_mcp_server: _Optional[_Union[_external_mcp_server_pb2.ExternalMcpServer, _Mapping]] = ...) -> None: ...

class CreatePlatformExternalMcpServerRequest(_message.Message):
    __slots__ = ("external_mcp_server", "api_key", "static_headers", "oauth_client_secret")
    EXTERNAL_MCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    STATIC_HEADERS_FIELD_NUMBER: _ClassVar[int]
    OAUTH_CLIENT_SECRET_FIELD_NUMBER: _ClassVar[int]
    external_mcp_server: _external_mcp_server_pb2.ExternalMcpServer
    api_key: str
    static_headers: _containers.RepeatedCompositeFieldContainer[_external_mcp_server_pb2.ExternalMcpStaticHeaderValue]
    oauth_client_secret: str
    def __init__(self, external_mcp_server: _Optional[_Union[_external_mcp_server_pb2.ExternalMcpServer, _Mapping]] = ..., api_key: _Optional[str] = ..., static_headers: _Optional[_Iterable[_Union[_external_mcp_server_pb2.ExternalMcpStaticHeaderValue, _Mapping]]] = ..., oauth_client_secret: _Optional[str] = ...) -> None: ...

class CreatePlatformExternalMcpServerResponse(_message.Message):
    __slots__ = ("external_mcp_server",)
    EXTERNAL_MCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    external_mcp_server: _external_mcp_server_pb2.ExternalMcpServer
    def __init__(self, external_mcp_server: _Optional[_Union[_external_mcp_server_pb2.ExternalMcpServer, _Mapping]] = ...) -> None: ...

class GetExternalMcpServerRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetExternalMcpServerResponse(_message.Message):
    __slots__ = ("external_mcp_server",)
    EXTERNAL_MCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    external_mcp_server: _external_mcp_server_pb2.ExternalMcpServer
    def __init__(self, external_mcp_server: _Optional[_Union[_external_mcp_server_pb2.ExternalMcpServer, _Mapping]] = ...) -> None: ...

class GetExternalMcpServerOAuthMetadataRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetExternalMcpServerOAuthMetadataResponse(_message.Message):
    __slots__ = ("oauth", "redirect_uri", "metadata_version", "server_display_name")
    OAUTH_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_URI_FIELD_NUMBER: _ClassVar[int]
    METADATA_VERSION_FIELD_NUMBER: _ClassVar[int]
    SERVER_DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    oauth: _external_mcp_server_pb2.ExternalMcpOAuthConfig
    redirect_uri: str
    metadata_version: str
    server_display_name: str
    def __init__(self, oauth: _Optional[_Union[_external_mcp_server_pb2.ExternalMcpOAuthConfig, _Mapping]] = ..., redirect_uri: _Optional[str] = ..., metadata_version: _Optional[str] = ..., server_display_name: _Optional[str] = ...) -> None: ...

class ExchangeExternalMcpOAuthTokenRequest(_message.Message):
    __slots__ = ("name", "code", "code_verifier", "redirect_uri", "refresh_token", "metadata_version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    CODE_VERIFIER_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_URI_FIELD_NUMBER: _ClassVar[int]
    REFRESH_TOKEN_FIELD_NUMBER: _ClassVar[int]
    METADATA_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    code: str
    code_verifier: str
    redirect_uri: str
    refresh_token: str
    metadata_version: str
    def __init__(self, name: _Optional[str] = ..., code: _Optional[str] = ..., code_verifier: _Optional[str] = ..., redirect_uri: _Optional[str] = ..., refresh_token: _Optional[str] = ..., metadata_version: _Optional[str] = ...) -> None: ...

class ExchangeExternalMcpOAuthTokenResponse(_message.Message):
    __slots__ = ("access_token", "token_type", "expires_in", "refresh_token", "scope")
    ACCESS_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOKEN_TYPE_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_IN_FIELD_NUMBER: _ClassVar[int]
    REFRESH_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    access_token: str
    token_type: str
    expires_in: int
    refresh_token: str
    scope: str
    def __init__(self, access_token: _Optional[str] = ..., token_type: _Optional[str] = ..., expires_in: _Optional[int] = ..., refresh_token: _Optional[str] = ..., scope: _Optional[str] = ...) -> None: ...

class UpdateExternalMcpServerRequest(_message.Message):
    __slots__ = ("external_mcp_server", "api_key", "static_headers", "oauth_client_secret", "clear_static_headers")
    EXTERNAL_MCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    STATIC_HEADERS_FIELD_NUMBER: _ClassVar[int]
    OAUTH_CLIENT_SECRET_FIELD_NUMBER: _ClassVar[int]
    CLEAR_STATIC_HEADERS_FIELD_NUMBER: _ClassVar[int]
    external_mcp_server: _external_mcp_server_pb2.ExternalMcpServer
    api_key: str
    static_headers: _containers.RepeatedCompositeFieldContainer[_external_mcp_server_pb2.ExternalMcpStaticHeaderValue]
    oauth_client_secret: str
    clear_static_headers: bool
    def __init__(self, external_mcp_server: _Optional[_Union[_external_mcp_server_pb2.ExternalMcpServer, _Mapping]] = ..., api_key: _Optional[str] = ..., static_headers: _Optional[_Iterable[_Union[_external_mcp_server_pb2.ExternalMcpStaticHeaderValue, _Mapping]]] = ..., oauth_client_secret: _Optional[str] = ..., clear_static_headers: _Optional[bool] = ...) -> None: ...

class UpdateExternalMcpServerResponse(_message.Message):
    __slots__ = ("external_mcp_server",)
    EXTERNAL_MCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    external_mcp_server: _external_mcp_server_pb2.ExternalMcpServer
    def __init__(self, external_mcp_server: _Optional[_Union[_external_mcp_server_pb2.ExternalMcpServer, _Mapping]] = ...) -> None: ...

class DeleteExternalMcpServerRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteExternalMcpServerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListExternalMcpServersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListExternalMcpServersResponse(_message.Message):
    __slots__ = ("external_mcp_servers",)
    EXTERNAL_MCP_SERVERS_FIELD_NUMBER: _ClassVar[int]
    external_mcp_servers: _containers.RepeatedCompositeFieldContainer[_external_mcp_server_pb2.ExternalMcpServerSummary]
    def __init__(self, external_mcp_servers: _Optional[_Iterable[_Union[_external_mcp_server_pb2.ExternalMcpServerSummary, _Mapping]]] = ...) -> None: ...

class ListExternalMcpServerPermissionsRequest(_message.Message):
    __slots__ = ("name", "subject_type", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject_type: _permission_pb2.SubjectType
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject_type: _Optional[_Union[_permission_pb2.SubjectType, str]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class ListExternalMcpServerPermissionsResponse(_message.Message):
    __slots__ = ("permissions",)
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    permissions: _containers.RepeatedCompositeFieldContainer[_permission_pb2.DeploymentPermission]
    def __init__(self, permissions: _Optional[_Iterable[_Union[_permission_pb2.DeploymentPermission, _Mapping]]] = ...) -> None: ...

class AddExternalMcpServerPermissionRequest(_message.Message):
    __slots__ = ("name", "subject", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject: _permission_pb2.Subject
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject: _Optional[_Union[_permission_pb2.Subject, _Mapping]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class AddExternalMcpServerPermissionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemoveExternalMcpServerPermissionRequest(_message.Message):
    __slots__ = ("name", "subject", "role")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subject: _permission_pb2.Subject
    role: _permission_pb2.DeploymentRole
    def __init__(self, name: _Optional[str] = ..., subject: _Optional[_Union[_permission_pb2.Subject, _Mapping]] = ..., role: _Optional[_Union[_permission_pb2.DeploymentRole, str]] = ...) -> None: ...

class RemoveExternalMcpServerPermissionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
