// The shapes of a RAG's {rag_url}/files and /context answers (gateway/rag/routes.py), and the loaders over them.
import { gatewayJson } from "../../api/gatewayKey";
import type { Page, PageLoader } from "../../api/pagination";

export interface RagFile {
  id: string;
  filename: string;
  bytes: number;
  status: "processing" | "ready" | "failed";
  failure_reason: string | null;
  chunk_count: number;
  created_at: number;
}

interface FileList {
  data: RagFile[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface ContextChunk {
  text: string;
  score: number;
  file_id: string;
  filename: string;
  chunk_index: number;
}

/** One page of the RAG's files (the gateway's cursor is the page token). */
export function fileLoader(tenantId: string, ragUrl: string): PageLoader<RagFile> {
  return async (pageToken, pageSize, signal): Promise<Page<RagFile>> => {
    const query = new URLSearchParams({ limit: String(pageSize) });
    if (pageToken) {
      query.set("after", pageToken);
    }
    const page = await gatewayJson<FileList>(tenantId, `${ragUrl}/files?${query.toString()}`, { signal });
    return { items: page.data, nextPageToken: page.has_more && page.next_cursor ? page.next_cursor : "" };
  };
}

/**
 * Where the files just uploaded stand: one listing of the RAG's processing files per poll (its first page of 100),
 * then each of `ids` absent from it once (its final status, or processing beyond that page): the calls per poll are
 * one plus the files that changed, never one per file of the RAG.
 */
export async function pollStatuses(tenantId: string, ragUrl: string, ids: string[], signal: AbortSignal): Promise<Map<string, RagFile>> {
  const query = new URLSearchParams({ limit: "100", status: "processing" });
  const page = await gatewayJson<FileList>(tenantId, `${ragUrl}/files?${query.toString()}`, { signal });
  const known = new Map<string, RagFile>();
  for (const file of page.data) {
    if (ids.includes(file.id)) {
      known.set(file.id, file);
    }
  }
  const rest = ids.filter((id) => !known.has(id));
  const read = await Promise.all(rest.map((id) => oneFile(tenantId, ragUrl, id, signal)));
  for (const file of read) {
    known.set(file.id, file);
  }
  return known;
}

export async function oneFile(tenantId: string, ragUrl: string, id: string, signal: AbortSignal): Promise<RagFile> {
  return gatewayJson<RagFile>(tenantId, `${ragUrl}/files/${encodeURIComponent(id)}`, { signal });
}

export async function deleteFile(tenantId: string, ragUrl: string, id: string): Promise<void> {
  await gatewayJson<unknown>(tenantId, `${ragUrl}/files/${encodeURIComponent(id)}`, { method: "DELETE" });
}

export async function context(tenantId: string, ragUrl: string, query: string, topK: number): Promise<ContextChunk[]> {
  const answer = await gatewayJson<{ data: ContextChunk[] }>(tenantId, `${ragUrl}/context`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ query, top_k: topK }),
  });
  return answer.data;
}
