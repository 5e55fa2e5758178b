// The current use of every limit that applies to one API key's calls (GetLimitUsage), optionally with a model's
// per-model limits. The key is picked from one server page of the tenant's keys (TenantListService, keyset pages),
// loaded when the section is opened; "More keys" asks for the next page.
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, SelectField, TextField } from "../../components/Fields";
import { useAction } from "../../components/useAction";
import { runOnSubmit } from "../../components/runOnSubmit";
import type { LimitUsage } from "../../gen/switchboard/limits/v1/limit_policy_pb";
import { LimitService } from "../../gen/switchboard/limits/v1/limit_service_pb";
import { TenantListService } from "../../gen/switchboard/tenants/v1/tenant_list_service_pb";
import { LimitUseList, UnknownUseHint } from "./LimitUse";
import { METRIC_NAMES, SCOPE_NAMES, TIER_NAMES } from "./names";

const KEYS_PAGE = 100;

/** "Token budget (Tenant, api key key_…)": the limits of several tiers and scopes apply to one key's calls. */
function named(entry: LimitUsage): string {
  const scope = `${SCOPE_NAMES[entry.scope?.kind ?? 0].toLowerCase()}${entry.scope?.id ? ` ${entry.scope.id}` : ""}`;
  return `${METRIC_NAMES[entry.metric]} (${TIER_NAMES[entry.tier]}, ${scope})`;
}

export function CurrentUse({ tenantId }: { tenantId: string }) {
  const [keys, setKeys] = useState<{ value: string; label: string }[] | undefined>(undefined);
  const [next, setNext] = useState("");
  const [key, setKey] = useState("");
  const [model, setModel] = useState("");
  const [usage, setUsage] = useState<LimitUsage[] | undefined>(undefined);
  const loadKeys = useAction(async (pageToken: string) => {
    const answer = await client(TenantListService).listApiKeys({ tenantId, page: { pageSize: KEYS_PAGE, pageToken } });
    const page = answer.apiKeys.map((k) => ({ value: k.id, label: `${k.name} (${k.prefix})` }));
    setKeys((known) => [...(pageToken === "" ? [] : (known ?? [])), ...page]);
    setNext(answer.nextPageToken);
    if (pageToken === "" && page[0] !== undefined) {
      setKey(page[0].value);
    }
  });
  const check = useAction(async () => {
    const answer = await client(LimitService).getLimitUsage({ tenantId, apiKeyId: key, model: model.trim() });
    setUsage(answer.limits);
  });
  return (
    <details
      class="panel"
      onToggle={(event) => {
        if (event.currentTarget.open && keys === undefined) {
          void loadKeys.run("");
        }
      }}
    >
      <summary>
        <h2 class="inline-heading">Current use</h2>
      </summary>
      <ErrorBanner error={loadKeys.error ?? check.error} />
      {keys?.length === 0 ? <p class="hint">This tenant has no API keys.</p> : null}
      {keys !== undefined && keys.length > 0 ? (
        <form onSubmit={runOnSubmit(check.run)}>
          <SelectField label="API key" name="key" value={key} options={keys} onChange={setKey} />
          {next !== "" ? (
            <button type="button" disabled={loadKeys.busy} onClick={() => void loadKeys.run(next)}>
              More keys
            </button>
          ) : null}
          <TextField label="Model (optional)" name="model" value={model} onInput={setModel}
            hint="A model's id includes its per-model limits." />
          <FormActions submit="Show current use" busy={check.busy} />
        </form>
      ) : null}
      {usage !== undefined ? (
        usage.length === 0 ? (
          <p role="status">No limit applies to this key's calls.</p>
        ) : (
          <div role="status">
            <LimitUseList usage={usage} label={named} />
            <UnknownUseHint usage={usage} />
          </div>
        )
      ) : null}
    </details>
  );
}
