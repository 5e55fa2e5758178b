// The MCP servers the caller may use in a tenant (theirs and the platform's), searched a server page at a time for
// a SearchPicker: the agent editor's default servers and the chat's tools.
import { inTenant } from "../api/tenantScope";
import { client } from "../api/transport";
import { ResourceListService } from "../gen/switchboard/resources/v1/resource_list_service_pb";
import { searched, type ChoiceLoader } from "./SearchPicker";

export function mcpChoices(tenantId: string): ChoiceLoader {
  return searched((r, signal) => client(ResourceListService).listExternalMcpServers(r, inTenant(tenantId, signal)),
    (a) => a.externalMcpServers, (s) => ({ value: s.name, label: `${s.displayName || s.name} (${s.name})` }));
}
