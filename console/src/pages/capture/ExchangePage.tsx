// One captured exchange (CaptureService/GetCapturedExchange): the call, its usage row, and its request and response
// bodies decrypted by the server (a streamed answer's events joined in order). A JSON body is shown indented; other
// bodies (a stream's events) as they were sent. The server records each read in the audit trail, and refuses
// (shown in plain words) a caller who no longer holds capture or an exchange of another tenant.
import { useEffect, useState } from "preact/hooks";
import { client } from "../../api/transport";
import { routeUrl, type PageProps } from "../../app/routes";
import { ErrorBanner } from "../../components/ErrorBanner";
import { formatTime } from "../../components/format";
import type { GetCapturedExchangeResponse } from "../../gen/switchboard/capture/v1/capture_service_pb";
import { CaptureService } from "../../gen/switchboard/capture/v1/capture_service_pb";
import { callerOf, sizeOf, surfaceOf } from "./words";
import "./capture.css";

function readable(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body; // not one JSON document: a stream's events, or a cut body
  }
}

export default function ExchangePage({ tenant, params }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const id = params.exchange ?? "";
  const [found, setFound] = useState<GetCapturedExchangeResponse | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    const abort = new AbortController();
    client(CaptureService)
      .getCapturedExchange({ tenantId, id }, { signal: abort.signal })
      .then(setFound, (caught: unknown) => { if (!abort.signal.aborted) { setError(caught); } });
    return () => { abort.abort(); };
  }, [tenantId, id]);
  const exchange = found?.exchange;
  const usage = found?.usage;
  return (
    <section aria-busy={found === undefined && error === undefined}>
      <p><a href={routeUrl({ path: "capture", scope: "tenant" }, tenantId)}>All captured exchanges</a></p>
      <div class="page-head">
        <h1>Captured exchange <span class="mono">{id}</span></h1>
      </div>
      <ErrorBanner error={error} />
      {found === undefined || exchange === undefined ? null : (
        <>
          <dl class="totals" aria-label="The call">
            <div><dt>Time</dt><dd>{formatTime(exchange.time)}</dd></div>
            <div><dt>Caller</dt><dd>{callerOf(exchange)}</dd></div>
            <div><dt>Model</dt><dd class="mono">{exchange.model}</dd></div>
            <div><dt>Surface</dt><dd>{surfaceOf(exchange)}</dd></div>
            <div><dt>Status</dt><dd>{exchange.status}</dd></div>
          </dl>
          <dl class="totals" aria-label="Usage row">
            {usage === undefined ? (
              <div><dt>Usage row</dt><dd>deleted</dd></div>
            ) : (
              <>
                <div><dt>Usage row</dt><dd>{usage.usageEventId.toString()}</dd></div>
                <div><dt>Prompt tokens</dt><dd>{usage.promptTokens.toLocaleString()}</dd></div>
                <div><dt>Completion tokens</dt><dd>{usage.completionTokens.toLocaleString()}</dd></div>
                <div><dt>Total tokens</dt><dd>{usage.totalTokens.toLocaleString()}</dd></div>
                <div><dt>Latency</dt><dd>{Math.round(usage.latencyMs).toLocaleString()} ms</dd></div>
              </>
            )}
          </dl>
          <h2 id="request-title">Request ({sizeOf(exchange.requestBytes, exchange.requestTruncated)})</h2>
          <pre class="capture-body" aria-labelledby="request-title" tabIndex={0}>{readable(found.requestBody)}</pre>
          <h2 id="response-title">Response ({sizeOf(exchange.responseBytes, exchange.responseTruncated)})</h2>
          <pre class="capture-body" aria-labelledby="response-title" tabIndex={0}>{readable(found.responseBody)}</pre>
        </>
      )}
    </section>
  );
}
