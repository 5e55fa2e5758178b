// Usage: tokens and requests over time by model, API key or call kind, and the top models or keys of the range, all
// aggregated by the server (switchboard.usage.v1.UsageService, from the usage rollups). A page load makes three
// calls: GetSession, GetUsageSeries and ListTopUsage. In a tenant: its admins see every call, other members the
// calls of their own keys (the server decides). At /console/usage operators see every tenant, split by tenant too.
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useEffect, useMemo, useState } from "preact/hooks";
import { client } from "../../api/transport";
import type { PageProps } from "../../app/routes";
import { Chart, type ChartSeries } from "../../components/Chart";
import { ErrorBanner } from "../../components/ErrorBanner";
import { SelectField } from "../../components/Fields";
import type { GetUsageSeriesResponse, ListTopUsageResponse, UsageGroup } from "../../gen/switchboard/usage/v1/usage_service_pb";
import { Bucket, GroupBy, UsageService } from "../../gen/switchboard/usage/v1/usage_service_pb";

const RANGES = [
  { value: "24h", label: "Last 24 hours", hours: 24, bucket: Bucket.HOUR },
  { value: "7d", label: "Last 7 days", hours: 7 * 24, bucket: Bucket.HOUR },
  { value: "30d", label: "Last 30 days", hours: 30 * 24, bucket: Bucket.DAY },
  { value: "90d", label: "Last 90 days", hours: 90 * 24, bucket: Bucket.DAY },
] as const;

type RangeValue = (typeof RANGES)[number]["value"];

const SPLITS = [
  { value: "model", label: "Model", by: GroupBy.MODEL },
  { value: "key", label: "API key", by: GroupBy.API_KEY },
  { value: "kind", label: "Call kind", by: GroupBy.CALL_KIND },
  { value: "tenant", label: "Tenant", by: GroupBy.TENANT },
  { value: "none", label: "Nothing (one series)", by: GroupBy.NONE },
] as const;

type SplitValue = (typeof SPLITS)[number]["value"];

const TOPS = [
  { value: "model", label: "Top models", by: GroupBy.MODEL },
  { value: "key", label: "Top API keys", by: GroupBy.API_KEY },
  { value: "tenant", label: "Top tenants", by: GroupBy.TENANT },
] as const;

type TopValue = (typeof TOPS)[number]["value"];

const KIND_NAMES: Record<string, string> = {
  chat_completion: "Chat completions",
  response: "Responses",
  embedding: "Embeddings",
  rerank: "Rerank",
  transcription: "Transcriptions",
  mcp_tool_call: "MCP tool calls",
  rag_context: "RAG retrievals",
};

function groupLabel(group: UsageGroup | undefined): string {
  if (group === undefined) {
    return "All calls";
  }
  if (group.other) {
    return "Other";
  }
  if (group.id === "") {
    return "All calls";
  }
  return KIND_NAMES[group.id] ?? (group.displayName || `${group.id} (deleted)`);
}

/** The range ending at the next whole hour, so the current hour's calls are in. */
function rangeOf(value: RangeValue): { start: Date; end: Date; bucket: Bucket } {
  const range = RANGES.find((r) => r.value === value) ?? RANGES[0];
  const end = new Date();
  end.setUTCMinutes(0, 0, 0);
  end.setUTCHours(end.getUTCHours() + 1);
  return { start: new Date(end.getTime() - range.hours * 3600 * 1000), end, bucket: range.bucket };
}

export default function UsagePage({ session, tenant }: PageProps) {
  const tenantId = tenant?.id ?? ""; // empty at /console/usage: every tenant (operators)
  const across = tenant === undefined;
  const [range, setRange] = useState<RangeValue>("7d");
  const [split, setSplit] = useState<SplitValue>(across ? "tenant" : "model");
  const [top, setTop] = useState<TopValue>(across ? "tenant" : "model");
  const [series, setSeries] = useState<GetUsageSeriesResponse | undefined>(undefined);
  const [ranks, setRanks] = useState<ListTopUsageResponse | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);

  const splitBy = (SPLITS.find((s) => s.value === split) ?? SPLITS[0]).by;
  const topBy = (TOPS.find((t) => t.value === top) ?? TOPS[0]).by;
  useEffect(() => {
    const { start, end, bucket } = rangeOf(range);
    const times = { startTime: timestampFromDate(start), endTime: timestampFromDate(end) };
    const abort = new AbortController();
    setError(undefined);
    client(UsageService)
      .getUsageSeries({ tenantId, ...times, bucket, groupBy: splitBy, limit: 8 }, { signal: abort.signal })
      .then(setSeries, (caught: unknown) => {
        if (!abort.signal.aborted) setError(caught);
      });
    return () => {
      abort.abort();
    };
  }, [tenantId, range, splitBy]);
  useEffect(() => {
    const { start, end } = rangeOf(range);
    const abort = new AbortController();
    client(UsageService)
      .listTopUsage({ tenantId, startTime: timestampFromDate(start), endTime: timestampFromDate(end), groupBy: topBy, limit: 10 }, { signal: abort.signal })
      .then(setRanks, (caught: unknown) => {
        if (!abort.signal.aborted) setError(caught);
      });
    return () => {
      abort.abort();
    };
  }, [tenantId, range, topBy]);

  const times = useMemo(() => (series?.bucketStarts ?? []).map((t) => timestampDate(t).getTime() / 1000), [series]);
  const tokens = useMemo<ChartSeries[]>(
    () => (series?.series ?? []).map((s) => ({ label: groupLabel(s.group), values: s.totalTokens.map(Number) })),
    [series],
  );
  const requests = useMemo<ChartSeries[]>(
    () => (series?.series ?? []).map((s) => ({ label: groupLabel(s.group), values: s.requests.map(Number) })),
    [series],
  );
  const totals = series?.totals;
  const splits = SPLITS.filter((s) => across || s.value !== "tenant");
  const tops = TOPS.filter((t) => across || t.value !== "tenant");
  return (
    <section>
      <div class="page-head">
        <h1>{across ? "Usage across tenants" : "Usage"}</h1>
      </div>
      <p class="lead">
        {across
          ? "Every tenant's metered calls, summed by the server."
          : tenant.capabilities.tenantAdmin
            ? `Every metered call in ${tenant.name}.`
            : `The calls of your own API keys in ${tenant.name}.`}
        {session.canManageTenants && !across ? (
          <>
            {" "}
            <a href="/console/usage">All tenants</a>
          </>
        ) : null}
      </p>
      <div class="filters">
        <SelectField label="Range" name="range" value={range} options={RANGES} onChange={setRange} />
        <SelectField label="Split by" name="split" value={split} options={splits} onChange={setSplit} />
      </div>
      <ErrorBanner error={error} />
      {totals !== undefined ? (
        <dl class="totals" aria-label="Totals">
          <div><dt>Requests</dt><dd>{Number(totals.requests).toLocaleString()}</dd></div>
          <div><dt>Errors</dt><dd>{Number(totals.errors).toLocaleString()}</dd></div>
          <div><dt>Input tokens</dt><dd>{Number(totals.inputTokens).toLocaleString()}</dd></div>
          <div><dt>Output tokens</dt><dd>{Number(totals.outputTokens).toLocaleString()}</dd></div>
          <div><dt>Total tokens</dt><dd>{Number(totals.totalTokens).toLocaleString()}</dd></div>
        </dl>
      ) : null}
      <div aria-busy={series === undefined}>
        {series !== undefined ? (
          <>
            <Chart title="Tokens" times={times} series={tokens} />
            <Chart title="Requests" times={times} series={requests} />
          </>
        ) : (
          <p class="hint">Loading usage…</p>
        )}
      </div>
      <h2 id="top-heading">Top</h2>
      <SelectField label="Top list" name="top" value={top} options={tops} onChange={setTop} />
      <div class="table-scroll">
        <table aria-labelledby="top-heading" aria-busy={ranks === undefined}>
          <thead>
            <tr>
              <th scope="col">{(TOPS.find((t) => t.value === top) ?? TOPS[0]).label.replace("Top ", "").replace(/^./, (c) => c.toUpperCase())}</th>
              <th scope="col">Requests</th>
              <th scope="col">Errors</th>
              <th scope="col">Total tokens</th>
            </tr>
          </thead>
          <tbody>
            {(ranks?.ranks ?? []).map((rank, index) => (
              <tr key={rank.group?.id ?? index}>
                <td>{groupLabel(rank.group)}</td>
                <td>{Number(rank.totals?.requests ?? 0n).toLocaleString()}</td>
                <td>{Number(rank.totals?.errors ?? 0n).toLocaleString()}</td>
                <td>{Number(rank.totals?.totalTokens ?? 0n).toLocaleString()}</td>
              </tr>
            ))}
            {ranks?.ranks.length === 0 ? (
              <tr>
                <td colSpan={4}>No calls in this range.</td>
              </tr>
            ) : null}
          </tbody>
        </table>
      </div>
    </section>
  );
}
