// The person's past conversations in this tenant (ListConversations: theirs only, newest first), one page at a time,
// loaded when the panel is first opened. Opening one resumes it (the chat page reads its latest items).
import { useState } from "preact/hooks";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { client } from "../../api/transport";
import { ErrorBanner } from "../../components/ErrorBanner";
import { ConversationService } from "../../gen/platform/conversations/v1/conversation_service_pb";

const PAGE = 20;

interface Entry {
  id: string;
  title: string;
  when: string;
}

export function ConversationsPanel({ tenantId, current, onOpen }: { tenantId: string; current: string | undefined; onOpen: (id: string) => void }) {
  const [entries, setEntries] = useState<Entry[] | undefined>(undefined);
  const [after, setAfter] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const load = (cursor: string) => {
    client(ConversationService)
      .listConversations({ tenantId, after: cursor, limit: PAGE })
      .then(
        (answer) => {
          const page = answer.conversations.map((c) => ({
            id: c.id,
            title: c.metadata.title || "Untitled conversation",
            when: c.createTime ? timestampDate(c.createTime).toLocaleString() : "",
          }));
          setEntries((known) => [...(cursor === "" ? [] : (known ?? [])), ...page]);
          setAfter(answer.hasMore ? answer.lastId : undefined);
        },
        (caught: unknown) => {
          setError(caught);
        },
      );
  };
  return (
    <details
      class="panel"
      onToggle={(event) => {
        if (event.currentTarget.open) {
          load(""); // afresh on each opening: a conversation started meanwhile shows up
        }
      }}
    >
      <summary>Conversations</summary>
      <ErrorBanner error={error} />
      {entries?.length === 0 ? <p class="hint">No conversations yet.</p> : null}
      <ul class="plain-list conversations">
        {(entries ?? []).map((entry) => (
          <li key={entry.id}>
            <button type="button" class="link-button" aria-current={entry.id === current ? "true" : undefined}
              onClick={() => { onOpen(entry.id); }}>
              {entry.title}
            </button>
            <span class="hint"> {entry.when}</span>
          </li>
        ))}
      </ul>
      {after !== undefined ? (
        <button type="button" onClick={() => { load(after); }}>
          More conversations
        </button>
      ) : null}
    </details>
  );
}
