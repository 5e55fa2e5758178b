// The Responses API's output items as the chat shows them, and how a stream of events builds them up. Only the
// fields the page renders are typed; everything arrives as JSON from the gateway (OpenAI's wire shapes).

export interface ContentPart {
  type: string; // input_text, output_text, refusal, input_audio ...
  text?: string;
  refusal?: string;
}

export interface SearchResult {
  file_id?: string;
  filename?: string;
  score?: number;
  text?: string;
}

export interface Item {
  id?: string;
  type: string; // message, mcp_call, mcp_approval_request, mcp_approval_response, mcp_list_tools, file_search_call ...
  role?: string;
  status?: string;
  content?: ContentPart[] | string | undefined;
  server_label?: string;
  name?: string;
  arguments?: string;
  output?: string | null;
  error?: string | null;
  approval_request_id?: string;
  approve?: boolean;
  tools?: { name: string }[];
  queries?: string[];
  results?: SearchResult[] | null;
}

/** One exchange on screen: what the person sent, then the items the model and the tool loop produced. */
export interface Turn {
  key: number;
  /** What the person sent (a message, or approval decisions). */
  sent: Item[];
  /** The items in output order (a sparse index while streaming). */
  items: Item[];
  /** The response's id (an approval answers it), once response.created arrived. */
  responseId?: string | undefined;
  status: "streaming" | "done" | "failed";
  error?: string;
}

interface StreamData {
  output_index?: number;
  item?: Item;
  delta?: string;
  response?: { id?: string; status?: string; error?: { message?: string } | null; incomplete_details?: { reason?: string } | null };
  message?: string;
}

function messageText(item: Item, kind: "output_text" | "refusal", delta: string): Item {
  const parts = Array.isArray(item.content) ? [...item.content] : [];
  const last = parts[parts.length - 1];
  if (last?.type === kind) {
    parts[parts.length - 1] = kind === "refusal" ? { ...last, refusal: (last.refusal ?? "") + delta } : { ...last, text: (last.text ?? "") + delta };
  } else {
    parts.push(kind === "refusal" ? { type: kind, refusal: delta } : { type: kind, text: delta });
  }
  return { ...item, content: parts };
}

/** The turn after one stream event (a new object, so the page re-renders). */
export function applyEvent(turn: Turn, name: string, raw: unknown): Turn {
  const data = (raw ?? {}) as StreamData;
  const items = [...turn.items];
  const index = data.output_index ?? -1;
  switch (name) {
    case "response.created":
    case "response.in_progress":
      return { ...turn, responseId: data.response?.id ?? turn.responseId };
    case "response.output_item.added":
    case "response.output_item.done":
      if (data.item !== undefined && index >= 0) {
        const before = items[index];
        // A message's done item carries its whole text; an added one starts empty and deltas fill it.
        items[index] = name.endsWith("added") && before !== undefined ? { ...data.item, content: before.content } : data.item;
      }
      return { ...turn, items };
    case "response.output_text.delta":
    case "response.refusal.delta": {
      const target = items[index] ?? { type: "message", role: "assistant", content: [] };
      items[index] = messageText(target, name === "response.refusal.delta" ? "refusal" : "output_text", data.delta ?? "");
      return { ...turn, items };
    }
    case "response.completed":
      return { ...turn, responseId: data.response?.id ?? turn.responseId, status: "done" };
    case "response.incomplete":
      return {
        ...turn,
        status: "done",
        error: `The answer stopped early (${data.response?.incomplete_details?.reason ?? "incomplete"}).`,
      };
    case "response.failed":
      return { ...turn, status: "failed", error: data.response?.error?.message ?? "The model could not answer." };
    case "error":
      return { ...turn, status: "failed", error: data.message ?? "The gateway could not answer." };
    default:
      return turn;
  }
}

/** The text of a message item (its text parts joined). */
export function textOf(item: Item): string {
  if (typeof item.content === "string") {
    return item.content;
  }
  return (item.content ?? []).map((part) => part.text ?? "").join("");
}

/** A guardrail's (or the model's) refusal in a message, if any. */
export function refusalOf(item: Item): string | undefined {
  if (typeof item.content === "string") {
    return undefined;
  }
  const found = (item.content ?? []).find((part) => part.type === "refusal");
  return found === undefined ? undefined : (found.refusal ?? "");
}

/** Approval requests of these items that no later item answers. */
export function pendingApprovals(items: Item[]): Item[] {
  const answered = new Set(items.filter((i) => i.type === "mcp_approval_response").map((i) => i.approval_request_id));
  return items.filter((i) => i.type === "mcp_approval_request" && !answered.has(i.id));
}
