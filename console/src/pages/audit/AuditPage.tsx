// The audit trail (switchboard.audit.v1.AuditService/ListAuditEvents): who did what to which resource, from where,
// and whether it was allowed, newest first, one server page at a time. Filters are the API's own (actor, method,
// resource kind and name, outcome, time range) and apply on "Apply". A page load makes two calls (GetSession,
// ListAuditEvents). In a tenant, its admins read its events; at /console/audit operators read every tenant's.
import { useMemo } from "preact/hooks";
import type { PageLoader } from "../../api/pagination";
import { client } from "../../api/transport";
import type { PageProps } from "../../app/routes";
import { SelectField, TextField, chosenEnum } from "../../components/Fields";
import { FilterForm, timeRange, useFilters } from "../../components/Filters";
import { formatTime } from "../../components/format";
import { Table, type Column } from "../../components/Table";
import { ActorType, Outcome, Source, type AuditEvent } from "../../gen/switchboard/audit/v1/audit_event_pb";
import { AuditService } from "../../gen/switchboard/audit/v1/audit_service_pb";

interface Filters {
  actor: string;
  method: string;
  kind: string;
  resource: string;
  outcome: string;
  from: string;
  to: string;
}

const NONE: Filters = { actor: "", method: "", kind: "", resource: "", outcome: "", from: "", to: "" };

const OUTCOMES = [
  { value: "", label: "Any outcome" },
  { value: String(Outcome.ALLOWED), label: "Allowed" },
  { value: String(Outcome.REFUSED), label: "Refused" },
  { value: String(Outcome.FAILED), label: "Failed" },
];

const OUTCOME_WORDS: Record<Outcome, string> = {
  [Outcome.UNSPECIFIED]: "",
  [Outcome.ALLOWED]: "Allowed",
  [Outcome.REFUSED]: "Refused",
  [Outcome.FAILED]: "Failed",
};

function actorOf(event: AuditEvent): string {
  const actor = event.actor;
  if (actor === undefined || actor.type === ActorType.ANONYMOUS) {
    return "Anonymous";
  }
  if (actor.type === ActorType.API_KEY) {
    return `Key ${actor.apiKeyId}${actor.serviceAccountId ? ` of ${actor.serviceAccountId}` : actor.userId ? ` of ${actor.userId}` : ""}`;
  }
  return actor.userId || actor.serviceAccountId;
}

/** A method as people read it: `platform.tenants.v1.ApiKeyService/CreateApiKey` → `ApiKeyService/CreateApiKey`. */
function shortMethod(method: string): string {
  const slash = method.lastIndexOf("/");
  if (slash < 0) {
    return method; // a gateway event's name
  }
  const service = method.slice(0, slash).split(".").pop() ?? "";
  return `${service}/${method.slice(slash + 1)}`;
}

/** What a person types as a method, as the trail stores it: management methods as `/package.Service/Method`
 * (the leading slash is easy to forget), gateway events by their name (`gateway.approval_decided`). */
function fullMethod(typed: string): string {
  const method = typed.trim();
  return method.includes("/") && !method.startsWith("/") ? `/${method}` : method;
}

export default function AuditPage({ tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const filters = useFilters(NONE);
  const { draft, applied, field } = filters;
  const load = useMemo<PageLoader<AuditEvent>>(() => {
    const outcome = chosenEnum([Outcome.ALLOWED, Outcome.REFUSED, Outcome.FAILED], applied.outcome, Outcome.UNSPECIFIED);
    return async (pageToken, pageSize, signal) => {
      const answer = await client(AuditService).listAuditEvents(
        {
          tenantId,
          actorId: applied.actor.trim(),
          method: fullMethod(applied.method),
          resourceKind: applied.kind.trim(),
          resourceName: applied.resource.trim(),
          outcome,
          ...timeRange(applied.from, applied.to),
          pageSize,
          pageToken,
        },
        { signal },
      );
      return { items: answer.events, nextPageToken: answer.nextPageToken };
    };
  }, [tenantId, applied]);
  const columns: Column<AuditEvent>[] = [
    { header: "Time", cell: (e) => formatTime(e.time) },
    { header: "Actor", cell: actorOf },
    { header: "Action", cell: (e) => <span title={e.method}>{shortMethod(e.method)}</span> },
    { header: "Resource", cell: (e) => [e.resourceKind, e.resourceName].filter(Boolean).join(" ") },
    {
      header: "Outcome",
      cell: (e) => (
        <span class={e.outcome === Outcome.ALLOWED ? "" : "outcome-bad"}>
          {OUTCOME_WORDS[e.outcome]}
          {e.code && e.outcome !== Outcome.ALLOWED ? ` (${e.code})` : ""}
        </span>
      ),
    },
    { header: "Source", cell: (e) => `${e.source === Source.GATEWAY ? "Gateway" : "Management API"}${e.peerAddress ? ` · ${e.peerAddress}` : ""}` },
    ...(tenant === undefined ? [{ header: "Tenant", cell: (e: AuditEvent) => e.tenantId || "—" }] : []),
  ];
  return (
    <section>
      <div class="page-head">
        <h1>{tenant === undefined ? "Audit trail (all tenants)" : "Audit trail"}</h1>
      </div>
      <p class="lead">
        Every change made through the API and the gateway's security events, who made them and whether they were allowed.
        Never secrets or model content.
      </p>
      <FilterForm label="Filter the audit trail" filters={filters}>
        <TextField label="Actor" name="actor" value={draft.actor} onInput={field("actor")} placeholder="user, service account or key id" />
        <TextField label="Method" name="method" value={draft.method} onInput={field("method")} placeholder="platform.tenants.v1.ApiKeyService/CreateApiKey" />
        <TextField label="Resource kind" name="kind" value={draft.kind} onInput={field("kind")} />
        <TextField label="Resource" name="resource" value={draft.resource} onInput={field("resource")} placeholder="name or id" />
        <SelectField label="Outcome" name="outcome" value={draft.outcome} options={OUTCOMES} onChange={field("outcome")} />
        <TextField label="From" name="from" type="datetime-local" value={draft.from} onInput={field("from")} />
        <TextField label="Until" name="to" type="datetime-local" value={draft.to} onInput={field("to")} />
      </FilterForm>
      <Table caption="Audit events, newest first" columns={columns} load={load} rowKey={(e) => e.id} empty="No events match." />
    </section>
  );
}
