// Server-sent events over fetch() (EventSource cannot POST or send an Authorization header): the body is read as it
// arrives, split into events at blank lines, and each `data:` payload handed over parsed. Comment lines (the
// gateway's `: keepalive` while tools or guardrails run) are skipped.

export interface SseEvent {
  event: string;
  data: unknown;
}

/** Calls `onEvent` for each event of the stream until it ends (or `signal` aborts it). */
export async function readSse(body: ReadableStream<Uint8Array>, onEvent: (event: SseEvent) => void): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream() as ReadableWritablePair<string, Uint8Array>).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      break;
    }
    buffer += value;
    let end = buffer.search(/\r?\n\r?\n/);
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      dispatch(block, onEvent);
      end = buffer.search(/\r?\n\r?\n/);
    }
  }
  if (buffer.trim() !== "") {
    dispatch(buffer, onEvent);
  }
}

function dispatch(block: string, onEvent: (event: SseEvent) => void): void {
  let event = "message";
  const data: string[] = [];
  for (const line of block.split(/\r?\n/)) {
    if (line.startsWith(":")) {
      continue;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") {
      event = value;
    } else if (field === "data") {
      data.push(value);
    }
  }
  if (data.length === 0 || data.join("") === "[DONE]") {
    return;
  }
  onEvent({ event, data: JSON.parse(data.join("\n")) as unknown });
}
