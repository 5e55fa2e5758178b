// One service account: its details (GetServiceAccount) and its keys (ListApiKeys for the account), with key creation
// fixed to the account, and its limits (loaded when that section is opened). Two calls on load, plus the session's.
import { useEffect, useState } from "preact/hooks";
import { client } from "../../api/transport";
import { routeUrl, type PageProps } from "../../app/routes";
import { ErrorBanner } from "../../components/ErrorBanner";
import type { ServiceAccount } from "../../gen/platform/tenants/v1/service_account_pb";
import { ServiceAccountService } from "../../gen/platform/tenants/v1/service_account_service_pb";
import { LimitScopeKind } from "../../gen/switchboard/limits/v1/limit_policy_pb";
import { CreateKey } from "../keys/CreateKey";
import { KeysTable } from "../keys/KeysTable";
import { limitTiers } from "../limits/names";
import { LimitsSection } from "../limits/ScopeLimits";

export default function ServiceAccountPage({ session, tenant, params }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const accountId = params.account ?? "";
  const [account, setAccount] = useState<ServiceAccount | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [reload, setReload] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    client(ServiceAccountService)
      .getServiceAccount({ tenantId, serviceAccountId: accountId }, { signal: abort.signal })
      .then((answer) => { setAccount(answer.serviceAccount); }, (caught: unknown) => {
        if (!abort.signal.aborted) {
          setError(caught);
        }
      });
    return () => { abort.abort(); };
  }, [tenantId, accountId]);
  const changed = () => { setReload((n) => n + 1); };
  const tiers = limitTiers(session, tenant);
  return (
    <section>
      <p>
        <a href={routeUrl({ path: "service-accounts", scope: "tenant" }, tenantId)}>← Service accounts</a>
      </p>
      <div class="page-head">
        <h1>Service account {account?.name ?? ""}</h1>
        <CreateKey tenantId={tenantId} serviceAccountId={accountId} onCreated={changed} />
      </div>
      <ErrorBanner error={error} />
      {account?.description ? <p class="lead">{account.description}</p> : null}
      <p class="hint">
        ID <span class="mono">{accountId}</span>
      </p>
      {tiers.length > 0 ? (
        <LimitsSection tenantId={tenantId} scope={{ kind: LimitScopeKind.SERVICE_ACCOUNT, id: accountId }} tiers={tiers} />
      ) : null}
      <KeysTable tenantId={tenantId} serviceAccountId={accountId} reload={reload} onChanged={changed} limitTiers={tiers} />
    </section>
  );
}
