// Chat with any model, alias or preset agent the person may invoke, through the gateway's Responses API (streamed
// over SSE) with the tab's console key (api/gatewayKey.ts). A page load makes three calls: GetSession,
// CreateApiKey and the gateway's GET /v1/models; past conversations and the MCP servers offered as tools load when
// their panels are opened. Conversations are kept by the gateway's conversation API (each send names the
// conversation, so the gateway keeps its items); the tool loop's items — MCP calls, approval requests, file
// searches with their sources, a guardrail's refusal — are shown as their events arrive.
import { useEffect, useRef, useState } from "preact/hooks";
import { gatewayError, gatewayFetch, gatewayJson } from "../../api/gatewayKey";
import { readSse } from "../../api/sse";
import type { PageProps } from "../../app/routes";
import { ErrorBanner } from "../../components/ErrorBanner";
import { SelectField } from "../../components/Fields";
import { AudioAttach } from "./AudioAttach";
import { ConversationsPanel } from "./ConversationsPanel";
import { applyEvent, pendingApprovals, type Item, type Turn } from "./items";
import { ItemView } from "./ItemView";
import { ToolsPanel, type McpChoice } from "./ToolsPanel";

interface GatewayModel {
  id: string;
  owned_by: string;
  capabilities?: { task_type?: string; input_modalities?: string[] };
}

interface ConversationItems {
  data: Item[];
  has_more: boolean;
}

/** How many of a resumed conversation's latest items are shown (one page of the items API). */
const RESUME_ITEMS = 100;

let turnKeys = 0;

export default function ChatPage({ tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const [models, setModels] = useState<GatewayModel[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [model, setModel] = useState("");
  const [conversation, setConversation] = useState<string | undefined>(undefined);
  const [earlier, setEarlier] = useState(false);
  const [turns, setTurns] = useState<Turn[]>([]);
  const [draft, setDraft] = useState("");
  const [mcp, setMcp] = useState<McpChoice[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const abort = useRef<AbortController | undefined>(undefined);
  const log = useRef<HTMLDivElement>(null);

  // Keep the newest item in view as the answer streams in.
  useEffect(() => {
    const box = log.current;
    if (box !== null) {
      box.scrollTop = box.scrollHeight;
    }
  }, [turns]);

  useEffect(() => {
    const stop = new AbortController();
    // Another tenant (the picker keeps this page): its own key, models and conversations.
    setModels(undefined);
    setConversation(undefined);
    setTurns([]);
    setMcp([]);
    gatewayJson<{ data: GatewayModel[] }>(tenantId, "/v1/models", { signal: stop.signal }).then(
      (answer) => {
        setModels(answer.data);
        const first = answer.data.find((m) => (m.capabilities?.task_type ?? "text-generation") === "text-generation");
        setModel(first?.id ?? "");
      },
      (caught: unknown) => {
        if (!stop.signal.aborted) {
          setLoadError(caught);
        }
      },
    );
    return () => {
      stop.abort();
      abort.current?.abort();
    };
  }, [tenantId]);

  const chatModels = (models ?? []).filter((m) => (m.capabilities?.task_type ?? "text-generation") === "text-generation");
  const transcriber = (models ?? []).find((m) => m.capabilities?.task_type === "speech-to-text");
  const update = (key: number, change: (turn: Turn) => Turn) => {
    setTurns((all) => all.map((t) => (t.key === key ? change(t) : t)));
  };

  /** One Responses call in the current conversation (created on the first send, titled by its first words). */
  const send = async (input: Item[], title: string) => {
    setBusy(true);
    setError(undefined);
    const key = (turnKeys += 1);
    const controller = new AbortController();
    abort.current = controller;
    try {
      let conversationId = conversation;
      if (conversationId === undefined) {
        const created = await gatewayJson<{ id: string }>(tenantId, "/v1/conversations", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ metadata: { title: title.slice(0, 80) } }),
        });
        conversationId = created.id;
        setConversation(conversationId);
      }
      setTurns((all) => [...all, { key, sent: input, items: [], status: "streaming" }]);
      const tools = mcp.map((choice) => ({
        type: "mcp",
        server_label: choice.name,
        require_approval: choice.ask ? "always" : "never",
      }));
      const answer = await gatewayFetch(tenantId, "/v1/responses", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify({
          model,
          conversation: conversationId,
          input,
          stream: true,
          include: ["file_search_call.results"],
          ...(tools.length > 0 ? { tools } : {}),
        }),
        signal: controller.signal,
      });
      if (!answer.ok || answer.body === null) {
        const refused = await gatewayError(answer);
        update(key, (t) => ({ ...t, status: "failed", error: refused.message }));
        return;
      }
      await readSse(answer.body, ({ event, data }) => {
        update(key, (t) => applyEvent(t, event, data));
      });
      update(key, (t) => (t.status === "streaming" ? { ...t, status: "done" } : t));
    } catch (caught) {
      if (controller.signal.aborted) {
        update(key, (t) => ({ ...t, status: "failed", error: "Stopped." }));
      } else {
        setError(caught);
        update(key, (t) => (t.status === "streaming" ? { ...t, status: "failed", error: "The answer did not arrive." } : t));
      }
    } finally {
      setBusy(false);
    }
  };

  const submit = () => {
    const text = draft.trim();
    if (text === "" || model === "") {
      return;
    }
    setDraft("");
    void send([{ type: "message", role: "user", content: [{ type: "input_text", text }] }], text);
  };

  const decide = (request: Item, approve: boolean) => {
    void send([{ type: "mcp_approval_response", approval_request_id: request.id ?? "", approve }], "");
  };

  const resume = async (id: string) => {
    setError(undefined);
    try {
      const page = await gatewayJson<ConversationItems>(
        tenantId,
        `/v1/conversations/${encodeURIComponent(id)}/items?order=desc&limit=${RESUME_ITEMS}`,
      );
      setConversation(id);
      setEarlier(page.has_more);
      setTurns([{ key: (turnKeys += 1), sent: [], items: [...page.data].reverse(), status: "done" }]);
    } catch (caught) {
      setError(caught);
    }
  };

  const startOver = () => {
    abort.current?.abort();
    setConversation(undefined);
    setEarlier(false);
    setTurns([]);
  };

  const everything = turns.flatMap((t) => [...t.sent, ...t.items]);
  const pending = new Set(pendingApprovals(everything).map((i) => i.id));

  return (
    <section class="chat">
      <div class="page-head">
        <h1>Chat</h1>
        <button type="button" onClick={startOver} disabled={busy}>
          New conversation
        </button>
      </div>
      <ErrorBanner error={loadError} />
      <div class="chat-layout">
        <aside class="chat-side">
          {models === undefined ? (
            <p aria-busy="true">Loading models…</p>
          ) : chatModels.length === 0 ? (
            <p>No model is available to you in this tenant.</p>
          ) : (
            <SelectField
              label="Model or agent"
              name="model"
              value={model}
              options={chatModels.map((m) => ({ value: m.id, label: m.id }))}
              onChange={setModel}
            />
          )}
          <ToolsPanel key={`tools-${tenantId}`} tenantId={tenantId} value={mcp} onChange={setMcp} />
          <ConversationsPanel key={`conversations-${tenantId}`} tenantId={tenantId} current={conversation} onOpen={(id) => void resume(id)} />
        </aside>
        <div class="chat-main">
          {/* focusable: a keyboard can scroll the transcript */}
          <div class="transcript" role="log" aria-label="Conversation" aria-busy={busy} tabIndex={0} ref={log}>
            {earlier ? <p class="hint">Earlier items of this conversation are not shown.</p> : null}
            {turns.length === 0 ? <p class="hint">Ask something to start a conversation.</p> : null}
            {turns.map((turn) => (
              <div class="turn" key={turn.key} data-status={turn.status}>
                {/* map skips the holes of a stream's sparse items */}
                {[...turn.sent, ...turn.items].map((item, index) => (
                  <ItemView key={item.id ?? `${turn.key}-${index}`} item={item} pending={pending.has(item.id)}
                    busy={busy} onDecide={decide} />
                ))}
                {turn.status === "streaming" && turn.items.length === 0 ? <p class="hint">Waiting for the answer…</p> : null}
                {turn.error !== undefined ? (
                  <p class="banner banner-error" role="alert">
                    {turn.error}
                  </p>
                ) : null}
              </div>
            ))}
          </div>
          <ErrorBanner error={error} />
          <form
            class="composer"
            onSubmit={(event) => {
              event.preventDefault();
              submit();
            }}
          >
            <label for="chat-message">Message</label>
            <textarea
              id="chat-message"
              name="message"
              rows={3}
              value={draft}
              onInput={(event) => {
                setDraft(event.currentTarget.value);
              }}
              onKeyDown={(event) => {
                if (event.key === "Enter" && !event.shiftKey) {
                  event.preventDefault();
                  submit();
                }
              }}
            />
            <div class="form-actions">
              <button type="submit" class="primary" disabled={busy || model === ""}>
                {busy ? "Answering…" : "Send"}
              </button>
              {busy ? (
                <button type="button" onClick={() => abort.current?.abort()}>
                  Stop
                </button>
              ) : null}
              <AudioAttach tenantId={tenantId} model={transcriber?.id} onText={(text) => {
                setDraft((now) => (now === "" ? text : `${now}\n${text}`));
              }} />
            </div>
          </form>
        </div>
      </div>
    </section>
  );
}
