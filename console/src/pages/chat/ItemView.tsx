// One item of a conversation in plain words: the person's message, the model's answer (streamed), a refusal, a tool
// listing, an MCP tool call with its arguments and result, an approval request with Approve / Deny while it is
// unanswered, and a file search with the sources it found.
import { refusalOf, textOf, type Item } from "./items";

interface ItemViewProps {
  item: Item;
  pending: boolean;
  busy: boolean;
  onDecide: (request: Item, approve: boolean) => void;
}

function call(item: Item): string {
  return `${item.server_label ?? ""} · ${item.name ?? ""}(${item.arguments ?? ""})`;
}

export function ItemView({ item, pending, busy, onDecide }: ItemViewProps) {
  switch (item.type) {
    case "message": {
      const refusal = item.role === "assistant" ? refusalOf(item) : undefined;
      if (refusal !== undefined) {
        return (
          <div class="msg msg-refusal" role="note">
            <strong>The answer was withheld.</strong> {refusal}
          </div>
        );
      }
      return (
        <div class={item.role === "user" ? "msg msg-user" : "msg msg-assistant"}>
          <span class="msg-who">{item.role === "user" ? "You" : "Assistant"}</span>
          <p class="msg-text">{textOf(item)}</p>
        </div>
      );
    }
    case "mcp_list_tools":
      return (
        <p class="tool-note">
          Tools of {item.server_label}: {(item.tools ?? []).map((t) => t.name).join(", ") || "none"}
        </p>
      );
    case "mcp_call":
      return (
        <div class="tool tool-call">
          <span class="tool-head">Tool call</span> <code>{call(item)}</code>
          {item.error ? (
            <p class="field-error">Failed: {item.error}</p>
          ) : item.output !== undefined && item.output !== null ? (
            <p class="tool-output">→ {item.output}</p>
          ) : (
            <p class="hint">Running…</p>
          )}
        </div>
      );
    case "mcp_approval_request":
      return (
        <div class="tool tool-approval" role="group" aria-label={`Approval for ${item.name ?? "a tool"}`}>
          <span class="tool-head">Approval needed</span> <code>{call(item)}</code>
          {pending ? (
            <div class="form-actions">
              <button type="button" class="primary" disabled={busy} onClick={() => { onDecide(item, true); }}>
                Approve
              </button>
              <button type="button" class="danger" disabled={busy} onClick={() => { onDecide(item, false); }}>
                Deny
              </button>
            </div>
          ) : (
            <p class="hint">Answered.</p>
          )}
        </div>
      );
    case "mcp_approval_response":
      return <p class="tool-note">You {item.approve ? "approved" : "denied"} the tool call.</p>;
    case "file_search_call":
      return (
        <div class="tool tool-search">
          <span class="tool-head">Searched</span> {(item.queries ?? []).join("; ")}
          {item.results === undefined || item.results === null ? (
            item.status === "completed" ? null : <p class="hint">Searching…</p>
          ) : item.results.length === 0 ? (
            <p class="hint">Nothing found.</p>
          ) : (
            <ol class="sources" aria-label="Sources">
              {item.results.map((found, index) => (
                <li key={`${found.file_id ?? ""}-${index}`}>
                  <strong>{found.filename ?? found.file_id}</strong>
                  {found.score !== undefined ? <span class="hint"> (score {found.score.toFixed(2)})</span> : null}
                  {found.text ? <p class="source-text">{found.text.slice(0, 300)}</p> : null}
                </li>
              ))}
            </ol>
          )}
        </div>
      );
    case "function_call":
      return <p class="tool-note">The model asked for the function {item.name}, which the console does not run.</p>;
    default:
      return null;
  }
}
