// Turning capture on and off (CaptureService/SetCapturePolicy) for the tenant, one of its service accounts or one of
// its API keys. A call is captured when any of the three is on (the widest wins), so the tenant's switch is shown
// first and the narrower scopes below it. Every change is the server's to allow, and is an audit event.
import { useEffect, useState } from "preact/hooks";
import { client } from "../../api/transport";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, SelectField, TextField, chosenEnum } from "../../components/Fields";
import { formatTime } from "../../components/format";
import { useAction } from "../../components/useAction";
import { runOnSubmit } from "../../components/runOnSubmit";
import { CaptureScopeKind, type CapturePolicy } from "../../gen/switchboard/capture/v1/capture_pb";
import { CaptureService } from "../../gen/switchboard/capture/v1/capture_service_pb";

const NARROW_KINDS = [
  { value: String(CaptureScopeKind.API_KEY), label: "API key" },
  { value: String(CaptureScopeKind.SERVICE_ACCOUNT), label: "Service account" },
];

function scopeName(policy: CapturePolicy): string {
  const scope = policy.scope;
  return scope?.kind === CaptureScopeKind.SERVICE_ACCOUNT ? `Service account ${scope.id}` : `API key ${scope?.id ?? ""}`;
}

function stamp(policy: CapturePolicy): string {
  return policy.updatedBy ? `set by ${policy.updatedBy}, ${formatTime(policy.updateTime)}` : "never set";
}

export function CapturePolicies({ tenantId }: { tenantId: string }) {
  const [policies, setPolicies] = useState<CapturePolicy[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [reload, setReload] = useState(0);
  const [kind, setKind] = useState(NARROW_KINDS[0]?.value ?? "");
  const [scopeId, setScopeId] = useState("");
  useEffect(() => {
    const abort = new AbortController();
    client(CaptureService)
      .listCapturePolicies({ tenantId }, { signal: abort.signal })
      .then(
        (answer) => { setPolicies(answer.policies); setLoadError(undefined); },
        (caught: unknown) => { if (!abort.signal.aborted) { setLoadError(caught); } },
      );
    return () => { abort.abort(); };
  }, [tenantId, reload]);
  const set = useAction(async (scopeKind: CaptureScopeKind, id: string, enabled: boolean) => {
    await client(CaptureService).setCapturePolicy({ tenantId, scope: { kind: scopeKind, id }, enabled });
    setReload((n) => n + 1);
  });
  const tenantPolicy = policies?.find((p) => p.scope?.kind === CaptureScopeKind.TENANT);
  const tenantOn = tenantPolicy?.enabled ?? false;
  const narrow = (policies ?? []).filter((p) => p.scope?.kind !== CaptureScopeKind.TENANT);
  return (
    <section class="capture-policies" aria-labelledby="policies-title" aria-busy={policies === undefined && loadError === undefined}>
      <h2 id="policies-title">Capture policies</h2>
      <ErrorBanner error={loadError ?? set.error} />
      {policies === undefined ? null : (
        <>
          <p class="capture-switch">
            <span>
              Whole tenant: <strong>{tenantOn ? "capturing" : "off"}</strong>{" "}
              <span class="hint">({tenantPolicy === undefined ? "never set" : stamp(tenantPolicy)})</span>
            </span>
            <button type="button" class={tenantOn ? "danger" : "primary"} disabled={set.busy}
              onClick={() => { void set.run(CaptureScopeKind.TENANT, "", !tenantOn); }}>
              {tenantOn ? "Turn off for the tenant" : "Turn on for the tenant"}
            </button>
          </p>
          {narrow.length === 0 ? null : (
            <ul class="capture-scopes" aria-label="Service account and key policies">
              {narrow.map((policy) => (
                <li key={`${policy.scope?.kind ?? 0}:${policy.scope?.id ?? ""}`}>
                  <span>
                    {scopeName(policy)}: <strong>{policy.enabled ? "capturing" : "off"}</strong>{" "}
                    <span class="hint">({stamp(policy)})</span>
                  </span>
                  <button type="button" disabled={set.busy}
                    onClick={() => { void set.run(policy.scope?.kind ?? CaptureScopeKind.API_KEY, policy.scope?.id ?? "", !policy.enabled); }}>
                    {policy.enabled ? "Turn off" : "Turn on"} <span class="visually-hidden">{scopeName(policy)}</span>
                  </button>
                </li>
              ))}
            </ul>
          )}
          <form class="filters" aria-label="Turn capture on for a key or service account"
            onSubmit={runOnSubmit(() => {
              const chosen = chosenEnum([CaptureScopeKind.API_KEY, CaptureScopeKind.SERVICE_ACCOUNT], kind, CaptureScopeKind.API_KEY);
              return set.run(chosen, scopeId.trim(), true);
            }, () => { setScopeId(""); })}>
            <SelectField label="Scope" name="scope-kind" value={kind} options={NARROW_KINDS} onChange={setKind} />
            <TextField label="Id" name="scope-id" value={scopeId} onInput={setScopeId} required placeholder="key or service account id" />
            <FormActions submit="Turn capture on" busy={set.busy} />
          </form>
        </>
      )}
    </section>
  );
}
