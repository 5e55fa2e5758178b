// What the capture pages say of an exchange's caller and surface, shared by the list and the detail view.
import { CallKind } from "../../gen/platform/metering/v1/usage_pb";
import type { CapturedExchange } from "../../gen/switchboard/capture/v1/capture_pb";

const SURFACES: Record<CallKind, string> = {
  [CallKind.UNSPECIFIED]: "—",
  [CallKind.CHAT_COMPLETION]: "Chat completion",
  [CallKind.RESPONSE]: "Response",
  [CallKind.EMBEDDING]: "Embedding",
  [CallKind.RERANK]: "Rerank",
  [CallKind.TRANSCRIPTION]: "Transcription",
  [CallKind.MCP_TOOL_CALL]: "MCP tool call",
  [CallKind.RAG_CONTEXT]: "RAG retrieval",
};

export function surfaceOf(exchange: CapturedExchange): string {
  return SURFACES[exchange.callKind];
}

/** The key a call was made with and whose key it is (a service account's or a person's). */
export function callerOf(exchange: CapturedExchange): string {
  const owner = exchange.serviceAccountId || exchange.userId;
  return owner ? `Key ${exchange.apiKeyId} of ${owner}` : `Key ${exchange.apiKeyId}`;
}

/** A body's size, saying when the capture kept only its start. */
export function sizeOf(bytes: bigint, truncated: boolean): string {
  return `${bytes.toLocaleString()} B${truncated ? " (cut)" : ""}`;
}
