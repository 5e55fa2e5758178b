// Names people read for MCP servers' auth types.
import { ExternalMcpAuthType } from "../../gen/platform/agents/v1/external_mcp_server_pb";

export const AUTH_NAMES: Record<ExternalMcpAuthType, string> = {
  [ExternalMcpAuthType.UNSPECIFIED]: "unknown",
  [ExternalMcpAuthType.NONE]: "no authentication",
  [ExternalMcpAuthType.BEARER]: "API key",
  [ExternalMcpAuthType.OAUTH_AUTHORIZATION_CODE]: "OAuth (each person connects)",
};
