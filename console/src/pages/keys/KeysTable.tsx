// A page of API keys with their lifecycle actions: disable / enable (the secret and grants are kept), revoke (final),
// and edit of name, description and expiry. Used by the keys page and by a service account's page.
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useMemo, useState } from "preact/hooks";
import { serverPages } from "../../api/pagination";
import { client } from "../../api/transport";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, TextField } from "../../components/Fields";
import { formatTime } from "../../components/format";
import { Table, type Column } from "../../components/Table";
import { useAction } from "../../components/useAction";
import { runOnSubmit } from "../../components/runOnSubmit";
import { DeleteButton } from "../../components/DeleteButton";
import { ApiKeyState, ApiKeyType, type ApiKey } from "../../gen/platform/tenants/v1/api_key_pb";
import { ApiKeyService } from "../../gen/platform/tenants/v1/api_key_service_pb";
import { LimitScopeKind, type LimitTier } from "../../gen/switchboard/limits/v1/limit_policy_pb";
import { TenantListService } from "../../gen/switchboard/tenants/v1/tenant_list_service_pb";
import { LimitsButton } from "../limits/ScopeLimits";
import { localDate } from "./CreateKey";
import { KIND_NAMES } from "./GrantsPicker";

const TYPE_NAMES: Record<ApiKeyType, string> = {
  [ApiKeyType.UNSPECIFIED]: "",
  [ApiKeyType.PERSONAL]: "Personal",
  [ApiKeyType.PERSONAL_ALL_RESOURCES]: "Personal (all resources)",
  [ApiKeyType.SERVICE_ACCOUNT]: "Service account",
};

const STATE_NAMES: Record<ApiKeyState, string> = {
  [ApiKeyState.UNSPECIFIED]: "",
  [ApiKeyState.ACTIVE]: "active",
  [ApiKeyState.DISABLED]: "disabled",
  [ApiKeyState.REVOKED]: "revoked",
};

/** A Date as a datetime-local value in the person's time zone. */
function localValue(date: Date): string {
  const shifted = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return shifted.toISOString().slice(0, 16);
}

function EditKey({ tenantId, apiKey, onDone, onCancel }: { tenantId: string; apiKey: ApiKey; onDone: () => void; onCancel: () => void }) {
  const [name, setName] = useState(apiKey.name);
  const [description, setDescription] = useState(apiKey.description);
  const [expiry, setExpiry] = useState(apiKey.expireTime ? localValue(timestampDate(apiKey.expireTime)) : "");
  const save = useAction(async () => {
    const expireAt = localDate(expiry);
    await client(ApiKeyService).updateApiKey({
      tenantId,
      apiKeyId: apiKey.id,
      name: name.trim(),
      description: description.trim(),
      ...(expireAt !== undefined ? { expireTime: timestampFromDate(expireAt) } : {}),
    });
  });
  return (
    <form onSubmit={runOnSubmit(save.run, onDone)}>
      <ErrorBanner error={save.error} />
      <TextField label="Name" value={name} onInput={setName} required autoFocus />
      <TextField label="Description" value={description} onInput={setDescription} />
      <TextField label="Expires" type="datetime-local" value={expiry} onInput={setExpiry}
        hint="A new expiry must be in the future." />
      <FormActions submit="Save" busy={save.busy} onCancel={onCancel} />
    </form>
  );
}

interface KeysTableProps {
  tenantId: string;
  serviceAccountId?: string;
  reload: number;
  onChanged: () => void;
  /** The limit tiers the person may set (limitTiers); none: no Limits action. */
  limitTiers: LimitTier[];
}

export function KeysTable({ tenantId, serviceAccountId, reload, onChanged, limitTiers }: KeysTableProps) {
  const [includeRevoked, setIncludeRevoked] = useState(false);
  const [editing, setEditing] = useState<ApiKey | undefined>(undefined);
  const service = client(ApiKeyService);
  const act = useAction(async (key: ApiKey, action: "disable" | "enable" | "revoke") => {
    const request = { tenantId, apiKeyId: key.id };
    if (action === "disable") {
      await service.disableApiKey(request);
    } else if (action === "enable") {
      await service.enableApiKey(request);
    } else {
      await service.revokeApiKey(request);
    }
    onChanged();
  });
  const load = useMemo(
    () => serverPages(
      (page, signal) => client(TenantListService).listApiKeys(
        { tenantId, includeRevoked, ...(serviceAccountId !== undefined ? { serviceAccountId } : {}), page },
        { signal },
      ),
      (a) => a.apiKeys,
    ),
    [tenantId, serviceAccountId, includeRevoked],
  );
  const columns: Column<ApiKey>[] = [
    { header: "Name", cell: (k) => k.name },
    { header: "Prefix", cell: (k) => <span class="mono">{k.prefix}</span> },
    { header: "Type", cell: (k) => TYPE_NAMES[k.type] },
    { header: "State", cell: (k) => <span class={`state state-${STATE_NAMES[k.state]}`}>{STATE_NAMES[k.state]}</span> },
    {
      header: "Grants",
      cell: (k) =>
        k.type === ApiKeyType.PERSONAL_ALL_RESOURCES
          ? "All your resources"
          : k.grants.map((g) => `${KIND_NAMES[g.kind]}: ${g.name}`).join(", ") || "None",
    },
    { header: "Expires", cell: (k) => (k.expireTime ? formatTime(k.expireTime) : "Never") },
    { header: "Last used", cell: (k) => (k.lastUsedTime ? formatTime(k.lastUsedTime) : "Never") },
    {
      header: "Actions",
      actions: true,
      cell: (k) =>
        k.state === ApiKeyState.REVOKED ? null : (
          <div class="row-actions">
            <button type="button" onClick={() => { setEditing(k); }}>
              Edit <span class="visually-hidden">{k.name}</span>
            </button>
            {k.state === ApiKeyState.ACTIVE ? (
              <button type="button" disabled={act.busy} onClick={() => void act.run(k, "disable")}>
                Disable <span class="visually-hidden">{k.name}</span>
              </button>
            ) : (
              <button type="button" disabled={act.busy} onClick={() => void act.run(k, "enable")}>
                Enable <span class="visually-hidden">{k.name}</span>
              </button>
            )}
            {limitTiers.length > 0 ? (
              <LimitsButton tenantId={tenantId} scope={{ kind: LimitScopeKind.API_KEY, id: k.id }} tiers={limitTiers}
                what={`the key ${k.name}`} />
            ) : null}
            <DeleteButton action="Revoke" label={k.name} question={`Revoke the key ${k.name}? This cannot be undone.`}
              busy={act.busy} onDelete={() => void act.run(k, "revoke")} />
          </div>
        ),
    },
  ];
  return (
    <>
      <label class="checkbox">
        <input type="checkbox" checked={includeRevoked} onChange={(e) => { setIncludeRevoked(e.currentTarget.checked); }} />
        Show revoked keys
      </label>
      <ErrorBanner error={act.error} />
      <Table caption="API keys" columns={columns} load={load} rowKey={(k) => k.id} reload={reload} empty="No keys yet." />
      <Dialog title="Edit API key" open={editing !== undefined} onClose={() => { setEditing(undefined); }}>
        {editing !== undefined ? (
          <EditKey tenantId={tenantId} apiKey={editing} onCancel={() => { setEditing(undefined); }}
            onDone={() => {
              setEditing(undefined);
              onChanged();
            }} />
        ) : null}
      </Dialog>
    </>
  );
}
