// Captured exchanges (switchboard.capture.v1.CaptureService): the capture policies of the tenant, and its captured
// calls newest first, one server page at a time, filtered by the server (key, service account, model, time range;
// applied on "Apply"). Only holders of the capture capability see the page (GetSession's `capture`); the server
// checks again on every call. A page load makes three calls (GetSession, ListCapturePolicies,
// ListCapturedExchanges); the bodies are read one exchange at a time on its own page, each read an audit event.
import { useMemo } from "preact/hooks";
import type { PageLoader } from "../../api/pagination";
import { client } from "../../api/transport";
import { routeUrl, type PageProps } from "../../app/routes";
import { TextField } from "../../components/Fields";
import { FilterForm, timeRange, useFilters } from "../../components/Filters";
import { formatTime } from "../../components/format";
import { Table, type Column } from "../../components/Table";
import type { CapturedExchange } from "../../gen/switchboard/capture/v1/capture_pb";
import { CaptureService } from "../../gen/switchboard/capture/v1/capture_service_pb";
import { CapturePolicies } from "./CapturePolicies";
import { callerOf, sizeOf, surfaceOf } from "./words";
import "./capture.css";

interface Filters {
  key: string;
  account: string;
  model: string;
  from: string;
  to: string;
}

const NONE: Filters = { key: "", account: "", model: "", from: "", to: "" };

export default function CapturePage({ tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const filters = useFilters(NONE);
  const { draft, applied, field } = filters;
  const load = useMemo<PageLoader<CapturedExchange>>(() => {
    return async (pageToken, pageSize, signal) => {
      const answer = await client(CaptureService).listCapturedExchanges(
        {
          tenantId,
          apiKeyId: applied.key.trim(),
          serviceAccountId: applied.account.trim(),
          model: applied.model.trim(),
          ...timeRange(applied.from, applied.to),
          pageSize,
          pageToken,
        },
        { signal },
      );
      return { items: answer.exchanges, nextPageToken: answer.nextPageToken };
    };
  }, [tenantId, applied]);
  const columns: Column<CapturedExchange>[] = [
    {
      header: "Time",
      cell: (e) => <a href={routeUrl({ path: "capture/:exchange", scope: "tenant" }, tenantId, { exchange: e.id })}>{formatTime(e.time)}</a>,
    },
    { header: "Caller", cell: callerOf },
    { header: "Model", cell: (e) => <span class="mono">{e.model}</span> },
    { header: "Surface", cell: surfaceOf },
    { header: "Status", cell: (e) => <span class={e.status >= 400 ? "outcome-bad" : ""}>{e.status}</span> },
    { header: "Request", cell: (e) => sizeOf(e.requestBytes, e.requestTruncated) },
    { header: "Response", cell: (e) => sizeOf(e.responseBytes, e.responseTruncated) },
  ];
  return (
    <section>
      <div class="page-head">
        <h1>Captured exchanges</h1>
      </div>
      <p class="lead">
        The request and response bodies of the gateway calls a capture policy covers, stored encrypted. Opening one is
        recorded in the audit trail.
      </p>
      <CapturePolicies tenantId={tenantId} />
      <h2>Exchanges</h2>
      <FilterForm label="Filter the captured exchanges" filters={filters}>
        <TextField label="API key" name="key" value={draft.key} onInput={field("key")} placeholder="key id" />
        <TextField label="Service account" name="account" value={draft.account} onInput={field("account")} placeholder="service account id" />
        <TextField label="Model" name="model" value={draft.model} onInput={field("model")} placeholder="model id as called" />
        <TextField label="From" name="from" type="datetime-local" value={draft.from} onInput={field("from")} />
        <TextField label="Until" name="to" type="datetime-local" value={draft.to} onInput={field("to")} />
      </FilterForm>
      <Table caption="Captured exchanges, newest first" columns={columns} load={load} rowKey={(e) => e.id} empty="No captured exchanges match." />
    </section>
  );
}
