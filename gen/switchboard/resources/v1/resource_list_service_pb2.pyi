from gen.platform.agents.v1 import external_mcp_server_pb2 as _external_mcp_server_pb2
from gen.platform.agents.v1 import preset_agent_pb2 as _preset_agent_pb2
from gen.platform.modelmanager.v1 import external_model_pb2 as _external_model_pb2
from gen.platform.modelmanager.v1 import model_alias_service_pb2 as _model_alias_service_pb2
from gen.platform.modelmanager.v1 import model_deployment_pb2 as _model_deployment_pb2
from gen.platform.platform.v1 import mcp_network_policy_pb2 as _mcp_network_policy_pb2
from gen.platform.ragmanager.v1 import rag_pb2 as _rag_pb2
from gen.platform.tenants.v1 import tenant_pb2 as _tenant_pb2
from gen.switchboard.tenants.v1 import tenant_list_service_pb2 as _tenant_list_service_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListModelDeploymentsRequest(_message.Message):
    __slots__ = ("page", "search")
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    page: _tenant_list_service_pb2.PageRequest
    search: str
    def __init__(self, page: _Optional[_Union[_tenant_list_service_pb2.PageRequest, _Mapping]] = ..., search: _Optional[str] = ...) -> None: ...

class ListModelDeploymentsResponse(_message.Message):
    __slots__ = ("model_deployments", "next_page_token")
    MODEL_DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    model_deployments: _containers.RepeatedCompositeFieldContainer[_model_deployment_pb2.ModelDeployment]
    next_page_token: str
    def __init__(self, model_deployments: _Optional[_Iterable[_Union[_model_deployment_pb2.ModelDeployment, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListExternalModelsRequest(_message.Message):
    __slots__ = ("page", "search")
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    page: _tenant_list_service_pb2.PageRequest
    search: str
    def __init__(self, page: _Optional[_Union[_tenant_list_service_pb2.PageRequest, _Mapping]] = ..., search: _Optional[str] = ...) -> None: ...

class ListExternalModelsResponse(_message.Message):
    __slots__ = ("external_models", "next_page_token")
    EXTERNAL_MODELS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    external_models: _containers.RepeatedCompositeFieldContainer[_external_model_pb2.ExternalModelSummary]
    next_page_token: str
    def __init__(self, external_models: _Optional[_Iterable[_Union[_external_model_pb2.ExternalModelSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListModelAliasesRequest(_message.Message):
    __slots__ = ("page", "search")
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    page: _tenant_list_service_pb2.PageRequest
    search: str
    def __init__(self, page: _Optional[_Union[_tenant_list_service_pb2.PageRequest, _Mapping]] = ..., search: _Optional[str] = ...) -> None: ...

class ListModelAliasesResponse(_message.Message):
    __slots__ = ("aliases", "next_page_token")
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    aliases: _containers.RepeatedCompositeFieldContainer[_model_alias_service_pb2.ListModelAliasesResponse.Item]
    next_page_token: str
    def __init__(self, aliases: _Optional[_Iterable[_Union[_model_alias_service_pb2.ListModelAliasesResponse.Item, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListExternalMcpServersRequest(_message.Message):
    __slots__ = ("page", "search")
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    page: _tenant_list_service_pb2.PageRequest
    search: str
    def __init__(self, page: _Optional[_Union[_tenant_list_service_pb2.PageRequest, _Mapping]] = ..., search: _Optional[str] = ...) -> None: ...

class ListExternalMcpServersResponse(_message.Message):
    __slots__ = ("external_mcp_servers", "next_page_token")
    EXTERNAL_MCP_SERVERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    external_mcp_servers: _containers.RepeatedCompositeFieldContainer[_external_mcp_server_pb2.ExternalMcpServerSummary]
    next_page_token: str
    def __init__(self, external_mcp_servers: _Optional[_Iterable[_Union[_external_mcp_server_pb2.ExternalMcpServerSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListRagsRequest(_message.Message):
    __slots__ = ("tenant_id", "page", "search")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    page: _tenant_list_service_pb2.PageRequest
    search: str
    def __init__(self, tenant_id: _Optional[str] = ..., page: _Optional[_Union[_tenant_list_service_pb2.PageRequest, _Mapping]] = ..., search: _Optional[str] = ...) -> None: ...

class ListRagsResponse(_message.Message):
    __slots__ = ("rags", "next_page_token")
    RAGS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    rags: _containers.RepeatedCompositeFieldContainer[_rag_pb2.Rag]
    next_page_token: str
    def __init__(self, rags: _Optional[_Iterable[_Union[_rag_pb2.Rag, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListPresetAgentsRequest(_message.Message):
    __slots__ = ("tenant_id", "page", "search")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    page: _tenant_list_service_pb2.PageRequest
    search: str
    def __init__(self, tenant_id: _Optional[str] = ..., page: _Optional[_Union[_tenant_list_service_pb2.PageRequest, _Mapping]] = ..., search: _Optional[str] = ...) -> None: ...

class ListPresetAgentsResponse(_message.Message):
    __slots__ = ("preset_agents", "next_page_token")
    PRESET_AGENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    preset_agents: _containers.RepeatedCompositeFieldContainer[_preset_agent_pb2.PresetAgent]
    next_page_token: str
    def __init__(self, preset_agents: _Optional[_Iterable[_Union[_preset_agent_pb2.PresetAgent, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListMcpNetworkPoliciesRequest(_message.Message):
    __slots__ = ("page",)
    PAGE_FIELD_NUMBER: _ClassVar[int]
    page: _tenant_list_service_pb2.PageRequest
    def __init__(self, page: _Optional[_Union[_tenant_list_service_pb2.PageRequest, _Mapping]] = ...) -> None: ...

class ListMcpNetworkPoliciesResponse(_message.Message):
    __slots__ = ("policies", "next_page_token")
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    policies: _containers.RepeatedCompositeFieldContainer[_mcp_network_policy_pb2.McpNetworkPolicy]
    next_page_token: str
    def __init__(self, policies: _Optional[_Iterable[_Union[_mcp_network_policy_pb2.McpNetworkPolicy, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListTenantsRequest(_message.Message):
    __slots__ = ("page",)
    PAGE_FIELD_NUMBER: _ClassVar[int]
    page: _tenant_list_service_pb2.PageRequest
    def __init__(self, page: _Optional[_Union[_tenant_list_service_pb2.PageRequest, _Mapping]] = ...) -> None: ...

class ListTenantsResponse(_message.Message):
    __slots__ = ("tenants", "next_page_token")
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tenants: _containers.RepeatedCompositeFieldContainer[_tenant_pb2.Tenant]
    next_page_token: str
    def __init__(self, tenants: _Optional[_Iterable[_Union[_tenant_pb2.Tenant, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
