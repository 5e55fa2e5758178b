// MCP network policies (operators: can_manage_tenants): the private networks MCP servers and tenant models may be
// reached on. A page of ListMcpNetworkPolicies per load; a delete sends the uid and resourceVersion read, so a policy
// changed meanwhile is not deleted blind (the server answers `aborted`, shown in words).
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import { routeUrl, type PageProps } from "../../app/routes";
import { ErrorBanner } from "../../components/ErrorBanner";
import { TextField } from "../../components/Fields";
import { Table, type Column } from "../../components/Table";
import { useAction } from "../../components/useAction";
import { usePagedList } from "../../components/usePagedList";
import { FormDialog } from "../../components/FormDialog";
import { DeleteButton } from "../../components/DeleteButton";
import type { McpNetworkPolicy } from "../../gen/platform/platform/v1/mcp_network_policy_pb";
import { McpNetworkPolicyService } from "../../gen/platform/platform/v1/mcp_network_policy_service_pb";
import { ResourceListService } from "../../gen/switchboard/resources/v1/resource_list_service_pb";
import "../resources.css";

function CreatePolicy({ onCreated }: { onCreated: () => void }) {
  const [networks, setNetworks] = useState("");
  const [description, setDescription] = useState("");
  const submit = useAction(async () => {
    await client(McpNetworkPolicyService).createMcpNetworkPolicy({
      spec: { allowedNetworks: networks.split(/[\s,]+/).filter(Boolean), description: description.trim() },
    });
  });
  return (
    <FormDialog opener="Create policy" title="Create network policy" submit="Create" action={submit}
      onReset={() => { setNetworks(""); setDescription(""); }} onDone={onCreated}>
      <TextField label="Allowed networks" name="allowed-networks" value={networks} onInput={setNetworks} required autoFocus
        hint="Addresses or CIDR ranges (10.20.0.0/16, fd12:3456::1), separated by commas or spaces." />
      <TextField label="Description" name="policy-description" value={description} onInput={setDescription} />
    </FormDialog>
  );
}

export default function NetworkPoliciesPage({ tenant }: PageProps) {
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(ResourceListService).listMcpNetworkPolicies({ page }, { signal }), (a) => a.policies,
    (policy: McpNetworkPolicy) =>
      client(McpNetworkPolicyService).deleteMcpNetworkPolicy({ name: policy.name, uid: policy.uid, resourceVersion: policy.resourceVersion }),
  );
  const columns: Column<McpNetworkPolicy>[] = [
    { header: "Name", cell: (p) => <span class="mono">{p.name}</span> },
    { header: "Networks", cell: (p) => <span class="mono">{p.spec?.allowedNetworks.join(", ")}</span> },
    { header: "Description", cell: (p) => p.spec?.description ?? "" },
    {
      header: "Actions",
      actions: true,
      cell: (p) => (
        <DeleteButton label={p.name} question={`Delete the network policy ${p.name}?`} busy={remove.busy}
          onDelete={() => void remove.run(p)} />
      ),
    },
  ];
  return (
    <section>
      <p><a href={routeUrl({ path: "mcp", scope: "tenant" }, tenant?.id)}>MCP servers</a></p>
      <div class="page-head">
        <h1>MCP network policies</h1>
        <CreatePolicy onCreated={refresh} />
      </div>
      <p class="lead">Private networks that MCP servers and tenant models may be reached on. A policy widens where traffic may go; it grants no one the right to use anything.</p>
      <ErrorBanner error={remove.error} />
      <Table caption="Network policies" columns={columns} load={load} rowKey={(p) => p.uid || p.name} reload={reload} empty="No network policies." />
    </section>
  );
}
