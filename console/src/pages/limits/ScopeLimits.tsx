// The limits set on one scope — an API key, a service account, a tenant, a model in a tenant — shown beside what
// they limit: each tier's policy, set, edited or deleted in place, and the current use of each of its limits against
// it (GetLimitUsage by scope: the scope's own counters, whichever key made the calls), with the soft budget's state.
// Nothing is asked on page load: opening the panel makes two calls, both for this scope only (ListLimitPolicies and
// GetLimitUsage with its `scope`), however many policies the tenant has. Shown only to the people limitTiers() names;
// the server decides.
import { useEffect, useState } from "preact/hooks";
import { client } from "../../api/transport";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { useAction } from "../../components/useAction";
import { DeleteButton } from "../../components/DeleteButton";
import { LimitTier, type LimitPolicy, type LimitUsage } from "../../gen/switchboard/limits/v1/limit_policy_pb";
import { LimitService } from "../../gen/switchboard/limits/v1/limit_service_pb";
import { LimitUseList, UnknownUseHint } from "./LimitUse";
import { TIER_NAMES } from "./names";
import { PolicyForm, describe, type ScopeRef } from "./PolicyForm";

interface ScopeLimitsProps {
  tenantId: string;
  scope: ScopeRef;
  /** The tiers the person may set here (limitTiers); the other tier's policy is shown, read-only, when there is one. */
  tiers: LimitTier[];
}

export function ScopeLimits({ tenantId, scope, tiers }: ScopeLimitsProps) {
  const [reload, setReload] = useState(0);
  const [found, setFound] = useState<{ policies: LimitPolicy[]; usage: LimitUsage[] } | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [editing, setEditing] = useState<LimitTier | undefined>(undefined);
  useEffect(() => {
    const abort = new AbortController();
    const service = client(LimitService);
    const options = { signal: abort.signal };
    setError(undefined);
    Promise.all([
      service.listLimitPolicies({ tenantId, scope }, options),
      service.getLimitUsage({ tenantId, scope }, options),
    ]).then(
      ([listed, used]) => { setFound({ policies: listed.policies, usage: used.limits }); },
      (caught: unknown) => {
        if (!abort.signal.aborted) {
          setError(caught);
        }
      },
    );
    return () => { abort.abort(); };
  }, [tenantId, scope.kind, scope.id, reload]);
  const changed = () => {
    setEditing(undefined);
    setReload((n) => n + 1);
  };
  const remove = useAction(async (tier: LimitTier) => {
    await client(LimitService).deleteLimitPolicy({ tenantId, tier, scope });
    changed();
  });
  if (found === undefined) {
    return <div class="scope-limits" aria-busy={error === undefined}><ErrorBanner error={error} /></div>;
  }
  const shown = [LimitTier.PLATFORM, LimitTier.TENANT].filter((t) => tiers.includes(t) || found.policies.some((p) => p.tier === t));
  return (
    <div class="scope-limits">
      <ErrorBanner error={error ?? remove.error} />
      {shown.map((tier) => {
        const policy = found.policies.find((p) => p.tier === tier);
        const name = TIER_NAMES[tier].toLowerCase();
        return (
          <section key={tier}>
            <h3>{TIER_NAMES[tier]} limits</h3>
            {editing === tier ? (
              <PolicyForm tenantId={tenantId} tiers={[tier]} policy={policy} scope={scope} onDone={changed}
                onCancel={() => { setEditing(undefined); }} />
            ) : (
              <>
                <p>{policy === undefined ? "None set." : describe(policy.limits)}</p>
                <LimitUseList usage={found.usage.filter((u) => u.tier === tier)} />
                {tiers.includes(tier) ? (
                  <div class="row-actions">
                    <button type="button" onClick={() => { setEditing(tier); }}>
                      {policy === undefined ? `Set ${name} limits` : `Edit ${name} limits`}
                    </button>
                    {policy !== undefined ? (
                      <DeleteButton action={`Delete ${name} limits`} question={`Delete the ${name} limits here?`}
                        busy={remove.busy} onDelete={() => void remove.run(tier)} />
                    ) : null}
                  </div>
                ) : null}
              </>
            )}
          </section>
        );
      })}
      <UnknownUseHint usage={found.usage} />
    </div>
  );
}

/** A row's "Limits" action: the panel in a dialog, loaded when opened. */
export function LimitsButton({ what, ...props }: ScopeLimitsProps & { what: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" onClick={() => { setOpen(true); }}>
        Limits <span class="visually-hidden">of {what}</span>
      </button>
      <Dialog title={`Limits of ${what}`} open={open} onClose={() => { setOpen(false); }}>
        <ScopeLimits {...props} />
      </Dialog>
    </>
  );
}

/** A page's own limits section (a service account's): the panel, loaded when the section is opened. */
export function LimitsSection(props: ScopeLimitsProps) {
  const [open, setOpen] = useState(false);
  return (
    <details class="panel" onToggle={(event) => { setOpen(event.currentTarget.open); }}>
      <summary>
        <h2 class="inline-heading">Limits</h2>
      </summary>
      {open ? <ScopeLimits {...props} /> : null}
    </details>
  );
}
