// One RAG: its settings, stored bytes against its quota, drag-and-drop upload with a progress bar per file and
// its ingest status followed until ready or failed, the files (the gateway's cursor pages), and a /context box to
// try a query. On load: GetRag and, once per tab and tenant, the CreateApiKey of the in-memory gateway key
// (api/gatewayKey.ts); with the shell's GetSession, three management calls at most. Quota bars are on the RAGs page
// (one GetTenantUsage covers every RAG), so this page does not spend a fourth call on GetQuota.
import { useEffect, useMemo, useState } from "preact/hooks";
import { plainWords } from "../../api/errors";
import { gatewayUpload } from "../../api/gateway";
import { sharingTarget } from "../../api/sharing";
import { client } from "../../api/transport";
import { routeUrl, type PageProps } from "../../app/routes";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, TextField } from "../../components/Fields";
import { ShareButton } from "../../components/SharingEditor";
import { Table, type Column } from "../../components/Table";
import { UploadDrop } from "../../components/UploadDrop";
import { formatBytes } from "../../components/UsageBar";
import { useAction } from "../../components/useAction";
import { runOnSubmit } from "../../components/runOnSubmit";
import { DeleteButton } from "../../components/DeleteButton";
import type { Rag } from "../../gen/platform/ragmanager/v1/rag_pb";
import { RagService } from "../../gen/platform/ragmanager/v1/rag_service_pb";
import { context, deleteFile, fileLoader, pollStatuses, type ContextChunk, type RagFile } from "./files";
import "../resources.css";

/** How often uploaded files' ingest status is asked while any is still processing. */
const POLL_MS = 1500;
/** Uploads in flight at once: enough to keep the line busy, few enough that each shows steady progress. */
const PARALLEL = 2;

interface Upload {
  key: string;
  name: string;
  size: number;
  sent: number;
  phase: "waiting" | "sending" | "processing" | "ready" | "failed";
  fileId?: string;
  message?: string;
}

const PHASE_WORDS: Record<Upload["phase"], string> = {
  waiting: "Waiting",
  sending: "Uploading",
  processing: "Indexing",
  ready: "Ready",
  failed: "Failed",
};

function Uploads({ tenantId, rag, onSettled }: { tenantId: string; rag: Rag; onSettled: () => void }) {
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [pollError, setPollError] = useState<unknown>(undefined);
  const [polls, setPolls] = useState(0); // bumped after each poll: the next one is scheduled from there
  const patch = (key: string, change: Partial<Upload>) => {
    setUploads((all) => all.map((u) => (u.key === key ? { ...u, ...change } : u)));
  };
  const send = async (file: File, key: string) => {
    patch(key, { phase: "sending" });
    const form = new FormData();
    form.append("file", file, file.name);
    try {
      const answer = await gatewayUpload<{ data: RagFile[] }>(tenantId, `${rag.ragUrl}/files`, form, (p) => {
        patch(key, { sent: p.loaded, size: p.total });
      });
      const stored = answer.data[0];
      if (stored === undefined) {
        patch(key, { phase: "failed", message: "The gateway stored nothing." });
      } else {
        patch(key, { phase: stored.status === "processing" ? "processing" : stored.status, fileId: stored.id, sent: file.size,
          message: stored.failure_reason ?? "" });
      }
    } catch (caught) {
      patch(key, { phase: "failed", message: plainWords(caught) });
    }
  };
  const start = (files: File[]) => {
    const added = files.map((file, i) => ({ file, key: `${Date.now()}-${i}-${file.name}` }));
    setUploads((all) => [...added.map(({ file, key }) => ({ key, name: file.name, size: file.size, sent: 0, phase: "waiting" as const })), ...all]);
    const queue = [...added];
    const worker = async () => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
        await send(next.file, next.key);
      }
    };
    void Promise.all(Array.from({ length: Math.min(PARALLEL, queue.length) }, worker)).then(onSettled);
  };
  // Follow the files being indexed: one poll at a time, while any is processing.
  const processing = uploads.filter((u) => u.phase === "processing" && u.fileId !== undefined).map((u) => u.fileId ?? "");
  const waitingFor = processing.join(",");
  useEffect(() => {
    if (waitingFor === "") {
      return;
    }
    const abort = new AbortController();
    const timer = setTimeout(() => {
      pollStatuses(tenantId, rag.ragUrl, waitingFor.split(","), abort.signal).then(
        (found) => {
          setPollError(undefined);
          const settled = [...found.values()].some((file) => file.status !== "processing");
          setUploads((all) => all.map((u) => {
            const file = u.fileId === undefined ? undefined : found.get(u.fileId);
            if (file === undefined || file.status === "processing") {
              return u;
            }
            return { ...u, phase: file.status, message: file.failure_reason ?? `${file.chunk_count} chunks` };
          }));
          if (settled) {
            onSettled();
          }
          setPolls((n) => n + 1);
        },
        (caught: unknown) => {
          if (!abort.signal.aborted) {
            setPollError(caught);
            setPolls((n) => n + 1); // keep trying: a passing failure should not freeze the statuses
          }
        },
      );
    }, POLL_MS);
    return () => { clearTimeout(timer); abort.abort(); };
  }, [waitingFor, polls, tenantId, rag.ragUrl]);
  return (
    <section aria-labelledby="upload-title">
      <h2 id="upload-title">Upload</h2>
      <UploadDrop label="Drop files here to upload them" onFiles={start}
        hint="PDF, HTML, Markdown, text, DOCX, JSON or CSV. Each file is indexed after it arrives." />
      <ErrorBanner error={pollError} />
      {uploads.length > 0 ? (
        <ul class="uploads" aria-label="Uploads">
          {uploads.map((u) => (
            <li key={u.key} data-phase={u.phase}>
              <span class="mono">{u.name}</span>
              <progress max={u.size || 1} value={u.phase === "waiting" ? 0 : u.phase === "sending" ? u.sent : u.size || 1}
                aria-label={`Upload of ${u.name}`} />
              <span role="status">
                {PHASE_WORDS[u.phase]}
                {u.phase === "sending" ? ` ${formatBytes(u.sent)} of ${formatBytes(u.size)}` : ""}
                {u.message ? `: ${u.message}` : ""}
              </span>
            </li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}

function ContextBox({ tenantId, rag }: { tenantId: string; rag: Rag }) {
  const [query, setQuery] = useState("");
  const [topK, setTopK] = useState("5");
  const [chunks, setChunks] = useState<ContextChunk[] | undefined>(undefined);
  const ask = useAction(async () => {
    setChunks(await context(tenantId, rag.ragUrl, query.trim(), Number(topK) || 5));
  });
  return (
    <section aria-labelledby="context-title">
      <h2 id="context-title">Try a query</h2>
      <form class="inline-form" onSubmit={runOnSubmit(ask.run)}>
        <ErrorBanner error={ask.error} />
        <TextField label="Query" name="context-query" type="search" value={query} onInput={setQuery} required />
        <TextField label="Results" name="context-top-k" value={topK} onInput={setTopK} hint="How many chunks (1 to 100)." />
        <FormActions submit="Search" busy={ask.busy} />
      </form>
      {chunks === undefined ? null : chunks.length === 0 ? <p class="empty">Nothing matched.</p> : (
        <ol class="context-results" aria-label="Matching chunks">
          {chunks.map((chunk) => (
            <li key={`${chunk.file_id}:${chunk.chunk_index}`}>
              <strong>{chunk.filename}</strong> <span class="hint">score {chunk.score.toFixed(3)}</span>
              <pre>{chunk.text}</pre>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

export default function RagPage({ session, tenant, params }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const id = params.rag ?? "";
  const [rag, setRag] = useState<Rag | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [reload, setReload] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    const signal = abort.signal;
    client(RagService).getRag({ id }, { signal }).then((answer) => { setRag(answer.rag); }, (caught: unknown) => {
      if (!signal.aborted) { setError(caught); }
    });
    return () => { abort.abort(); };
  }, [id, reload]);
  const load = useMemo(() => (rag === undefined ? undefined : fileLoader(tenantId, rag.ragUrl)), [tenantId, rag?.ragUrl]);
  const remove = useAction(async (file: RagFile) => {
    if (rag !== undefined) {
      await deleteFile(tenantId, rag.ragUrl, file.id);
      setReload((n) => n + 1);
    }
  });
  const columns: Column<RagFile>[] = [
    { header: "File", cell: (f) => <span class="mono">{f.filename}</span> },
    { header: "Status", cell: (f) => (f.status === "failed" ? `Failed: ${f.failure_reason ?? ""}` : f.status === "ready" ? "Ready" : "Indexing") },
    { header: "Chunks", cell: (f) => f.chunk_count },
    { header: "Stored", cell: (f) => formatBytes(f.bytes) },
    {
      header: "Actions",
      actions: true,
      cell: (f) => (
        <DeleteButton label={f.filename} question={`Delete ${f.filename}?`} busy={remove.busy}
          onDelete={() => void remove.run(f)} />
      ),
    },
  ];
  return (
    <section aria-busy={rag === undefined && error === undefined}>
      <p><a href={routeUrl({ path: "rags", scope: "tenant" }, tenantId)}>All RAGs</a></p>
      <ErrorBanner error={error} />
      {rag === undefined ? null : (
        <>
          <div class="page-head">
            <h1>{rag.displayName || rag.name}</h1>
            {(rag.tenantId === "" ? session.canManageTenants : (tenant?.capabilities.tenantAdmin ?? false) || (tenant?.capabilities.createRag ?? false)) ? (
              <ShareButton label={rag.name} target={() => sharingTarget("rag", rag.id, `RAG ${rag.name}`, rag.tenantId === "")} />
            ) : null}
          </div>
          <p class="lead">
            Embedding model <span class="mono">{rag.embeddingModel}</span>; address <span class="mono">{rag.ragUrl}</span>
          </p>
          <p>
            Stored: {formatBytes(rag.usedBytes)}{" "}
            <a href={routeUrl({ path: "rags", scope: "tenant" }, tenantId)}>(quotas on the RAGs page)</a>
          </p>
          <Uploads tenantId={tenantId} rag={rag} onSettled={() => { setReload((n) => n + 1); }} />
          <section aria-labelledby="files-title">
            <h2 id="files-title">Files</h2>
            <ErrorBanner error={remove.error} />
            {load === undefined ? null : (
              <Table caption="Uploaded files" columns={columns} load={load} rowKey={(f) => f.id} reload={reload} empty="No files yet." />
            )}
          </section>
          <ContextBox tenantId={tenantId} rag={rag} />
        </>
      )}
    </section>
  );
}
