// Operators' view of the GPU nodes, what each model deployment holds on them, and the nodes' model caches
// (platform.modelmanager.v1.ModelDeploymentObservabilityService): two calls on load, both server-side summaries.
// Figures the source does not have are shown as unknown, never as zero (GpuMetricsSource).
import "../resources.css";
import { useEffect, useState } from "preact/hooks";
import { client } from "../../api/transport";
import type { PageProps } from "../../app/routes";
import { ErrorBanner } from "../../components/ErrorBanner";
import { UsageBar, formatBytes } from "../../components/UsageBar";
import { GpuMetricsSource } from "../../gen/platform/modelmanager/v1/model_deployment_observability_pb";
import {
  type GetModelDeploymentGpuOverviewResponse,
  type ListNodeModelCacheUsageResponse,
} from "../../gen/platform/modelmanager/v1/model_deployment_observability_service_pb";
import { ModelDeploymentObservabilityService } from "../../gen/platform/modelmanager/v1/model_deployment_observability_service_pb";

const SOURCE_WORDS: Record<GpuMetricsSource, string> = {
  [GpuMetricsSource.UNSPECIFIED]: "Unknown source.",
  [GpuMetricsSource.LIVE]: "Live figures from the GPU metrics source.",
  [GpuMetricsSource.NODE_LABELS]: "Capacities from node labels; live usage is not collected.",
  [GpuMetricsSource.LIVE_UNAVAILABLE]: "The live GPU metrics source did not answer: usage is unknown right now.",
};

const mib = (value: bigint | number) => formatBytes(Number(value) * 1024 * 1024);

export default function ObservabilityPage(_props: PageProps) {
  const [gpus, setGpus] = useState<GetModelDeploymentGpuOverviewResponse | undefined>(undefined);
  const [caches, setCaches] = useState<ListNodeModelCacheUsageResponse | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    const abort = new AbortController();
    const api = client(ModelDeploymentObservabilityService);
    Promise.all([api.getModelDeploymentGpuOverview({}, { signal: abort.signal }), api.listNodeModelCacheUsage({}, { signal: abort.signal })]).then(
      ([overview, cacheUsage]) => { setGpus(overview); setCaches(cacheUsage); },
      (caught: unknown) => { if (!abort.signal.aborted) { setError(caught); } },
    );
    return () => { abort.abort(); };
  }, []);
  return (
    <section aria-busy={gpus === undefined && error === undefined}>
      <h1>GPU and cache</h1>
      <ErrorBanner error={error} />
      {gpus === undefined ? null : (
        <>
          <p class="lead">{SOURCE_WORDS[gpus.metricsSource]}</p>
          <h2>GPU nodes</h2>
          {gpus.nodes.length === 0 ? <p class="empty">No GPU nodes are known.</p> : null}
          <div class="cards">
            {gpus.nodes.map((node) => (
              <article class="card" key={node.nodeName} aria-label={`Node ${node.nodeName}`}>
                <h3>{node.nodeName}</h3>
                {node.gpus.map((gpu) => (
                  <UsageBar key={gpu.uuid || gpu.id} label={`GPU ${gpu.id} (${gpu.model})`} used={gpu.usedVramMib}
                    total={gpu.totalVramMib} format={mib} />
                ))}
              </article>
            ))}
          </div>
          <h2>Deployments on GPUs</h2>
          <div class="table-scroll">
            <table class="table">
              <caption>Memory each deployment holds</caption>
              <thead><tr><th scope="col">Deployment</th><th scope="col">Node</th><th scope="col">GPU</th><th scope="col">Memory</th></tr></thead>
              <tbody>
                {gpus.deployments.flatMap((d) =>
                  d.gpus.map((g) => (
                    <tr key={`${d.uid}:${g.nodeName}:${g.gpuId}`}>
                      <td data-label="Deployment">{d.name}</td>
                      <td data-label="Node">{g.nodeName}</td>
                      <td data-label="GPU">{g.gpuId}</td>
                      <td data-label="Memory">{mib(g.usedVramMib)}</td>
                    </tr>
                  )),
                )}
              </tbody>
            </table>
          </div>
          {gpus.deployments.length === 0 ? <p class="empty">No deployment holds GPU memory.</p> : null}
        </>
      )}
      {caches === undefined ? null : (
        <>
          <h2>Model caches</h2>
          {caches.nodes.length === 0 ? <p class="empty">No node reports a model cache.</p> : null}
          <div class="cards">
            {caches.nodes.map((node) => (
              <article class="card" key={node.nodeName} aria-label={`Cache of ${node.nodeName}`}>
                <h3>{node.nodeName}</h3>
                <p class="hint mono">{node.cachePath}</p>
                <UsageBar label="Cache disk" used={node.usedBytes} total={node.capacityBytes} />
                <ul class="plain-list">
                  {node.models.map((m) => (
                    <li key={m.modelUrl}>
                      {m.displayName || m.modelUrl}: {m.sizeBytes === undefined ? "size unknown" : formatBytes(m.sizeBytes)}
                      {m.deploymentNames.length > 0 ? ` — used by ${m.deploymentNames.join(", ")}` : " — unused"}
                    </li>
                  ))}
                </ul>
              </article>
            ))}
          </div>
        </>
      )}
    </section>
  );
}
