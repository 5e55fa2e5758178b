"""Responses streaming: chat-completion chunks in, Responses server-sent events out.

The order is the one the official SDK's stream helper insists on: `response.created` first (sequence 0) and
`response.in_progress`; for text, `output_item.added` (message) then `content_part.added` before any
`output_text.delta`, closed by `output_text.done`, `content_part.done`, `output_item.done`; for each tool call,
`output_item.added` (function_call), `function_call_arguments.delta`*, `.done`, `output_item.done`; then one terminal
event (`response.completed`, `response.incomplete` or `response.failed`) carrying the whole response. Every event has
`event:` and `data:` lines and a `sequence_number`; no `[DONE]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.event_stream import EventStream
from gateway.responses import translate

__all__ = ["ResponseStream"]


@dataclass
class _Call:
    output_index: int
    item_id: str
    call_id: str
    name: str
    arguments: str = ""


@dataclass
class ResponseStream:
    response_id: str
    model: str
    echo: dict[str, Any]
    created_at: int
    out: EventStream = field(default_factory=EventStream)
    sequence: int = 0
    output: list[dict[str, Any]] = field(default_factory=list)
    _text: str | None = None  # None until a message item is open
    _text_index: int = -1
    _text_id: str = ""
    _calls: dict[int, _Call] = field(default_factory=dict)  # chat tool-call index -> open call
    finish_reason: str | None = None
    usage: Any = None

    async def _emit(self, kind: str, **fields: Any) -> None:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        await self.out.write(b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n")

    def _snapshot(self, status: str, **extra: Any) -> dict[str, Any]:
        return translate.response_object(
            self.response_id,
            self.model,
            self.echo,
            status=status,
            output=[item for item in self.output if item is not None],
            usage=extra.pop("usage", None),
            created_at=self.created_at,
            **extra,
        )

    async def start(self) -> None:
        await self._emit("response.created", response=self._snapshot("in_progress"))
        await self._emit("response.in_progress", response=self._snapshot("in_progress"))

    async def _open_text(self) -> None:
        self._text, self._text_index, self._text_id = "", len(self.output), translate.new_id("msg")
        item = translate.message_item("", status="in_progress", item_id=self._text_id)
        item["content"] = []
        self.output.append(item)
        await self._emit("response.output_item.added", output_index=self._text_index, item=item)
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        await self._emit(
            "response.content_part.added",
            item_id=self._text_id,
            output_index=self._text_index,
            content_index=0,
            part=part,
        )

    async def _close_text(self, status: str = "completed") -> None:
        if self._text is None:
            return
        text, index, item_id = self._text, self._text_index, self._text_id
        common = {"item_id": item_id, "output_index": index, "content_index": 0}
        await self._emit("response.output_text.done", **common, text=text, logprobs=[])
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        await self._emit("response.content_part.done", **common, part=part)
        item = translate.message_item(text, status=status, item_id=item_id)
        self.output[index] = item
        await self._emit("response.output_item.done", output_index=index, item=item)
        self._text = None

    async def _tool_piece(self, piece: translate.ToolPiece) -> None:
        call = self._calls.get(piece.index)
        if call is None:  # a call's first piece carries its id and name; one naming no function is not shown
            name = translate.function_name(piece.name)
            call = _Call(len(self.output), translate.new_id("fc"), translate.call_id(piece.call_id), name)
            self._calls[piece.index] = call
            item = translate.function_call_item(call.call_id, call.name, "", item_id=call.item_id)
            item["status"] = "in_progress"
            self.output.append(item)
            await self._emit("response.output_item.added", output_index=call.output_index, item=item)
        if piece.arguments:
            call.arguments += piece.arguments
            await self._emit(
                "response.function_call_arguments.delta",
                item_id=call.item_id,
                output_index=call.output_index,
                delta=piece.arguments,
            )

    async def _close_calls(self) -> None:
        for call in self._calls.values():
            await self._emit(
                "response.function_call_arguments.done",
                item_id=call.item_id,
                output_index=call.output_index,
                name=call.name,
                arguments=call.arguments,
            )
            item = translate.function_call_item(call.call_id, call.name, call.arguments, item_id=call.item_id)
            self.output[call.output_index] = item
            await self._emit("response.output_item.done", output_index=call.output_index, item=item)
        self._calls.clear()

    async def chunk(self, chunk: dict[str, Any]) -> None:
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for delta in translate.stream_deltas(chunk):
            if delta.text:
                await self.text_delta(delta.text)
            for piece in delta.tool_pieces:
                await self._tool_piece(piece)
            self.finish_reason = delta.finish_reason or self.finish_reason

    async def finish(self) -> dict[str, Any]:
        """Close what is open and send the terminal event; returns the final response body."""
        await self._close_text(translate.item_status(self.finish_reason))
        await self._close_calls()
        incomplete = self.finish_reason == "length"
        status = "incomplete" if incomplete else "completed"
        body = self._snapshot(
            status,
            usage=translate.usage_of(self.usage),
            incomplete_reason="max_output_tokens" if incomplete else None,
        )
        await self._emit(f"response.{status}", response=body)
        return body

    async def fail(self, message: str) -> dict[str, Any]:
        body = self._snapshot("failed", error={"code": "server_error", "message": message})
        await self._emit("response.failed", response=body)
        return body

    # The tool loop's events (gateway.responses.loop): whole items, MCP progress, heartbeats, the terminal event.

    async def event(self, kind: str, **fields: Any) -> None:
        await self._emit(kind, **fields)

    async def add_item(self, item: dict[str, Any]) -> int:
        index = len(self.output)
        self.output.append(item)
        await self._emit("response.output_item.added", output_index=index, item=item)
        return index

    async def done_item(self, index: int, item: dict[str, Any]) -> None:
        self.output[index] = item
        await self._emit("response.output_item.done", output_index=index, item=item)

    async def text_delta(self, text: str) -> None:
        """A piece of the assistant's text as it comes (the tool loop's streamed model calls); opens the message."""
        if self._text is None:
            await self._open_text()
        self._text = (self._text or "") + text
        await self._emit(
            "response.output_text.delta",
            item_id=self._text_id,
            output_index=self._text_index,
            content_index=0,
            delta=text,
            logprobs=[],
        )

    async def close_text(self, status: str = "completed") -> dict[str, Any]:
        """Close the open message (after `text_delta`s) with its status (`translate.item_status`); returns it whole."""
        index = self._text_index
        await self._close_text(status)
        return self.output[index]

    async def text(self, text: str, status: str = "completed") -> dict[str, Any]:
        """One whole assistant message, as the event sequence of a message with one delta."""
        await self._open_text()
        await self.text_delta(text)
        return await self.close_text(status)

    async def function_call(self, item: dict[str, Any]) -> None:
        index = await self.add_item({**item, "arguments": "", "status": "in_progress"})
        common = {"item_id": item["id"], "output_index": index}
        await self._emit("response.function_call_arguments.delta", **common, delta=item["arguments"])
        await self._emit(
            "response.function_call_arguments.done", **common, name=item["name"], arguments=item["arguments"]
        )
        await self.done_item(index, item)

    async def refusal(self, text: str) -> dict[str, Any]:
        """A message whose one content part is a refusal (an output guardrail's), as its event sequence."""
        index, item_id = len(self.output), translate.new_id("msg")
        item = translate.refusal_item(text, item_id=item_id)
        self.output.append(item)
        opened = {**item, "status": "in_progress", "content": []}
        await self._emit("response.output_item.added", output_index=index, item=opened)
        common = {"item_id": item_id, "output_index": index, "content_index": 0}
        await self._emit("response.content_part.added", **common, part={"type": "refusal", "refusal": ""})
        await self._emit("response.refusal.delta", **common, delta=text)
        await self._emit("response.refusal.done", **common, refusal=text)
        await self._emit("response.content_part.done", **common, part={"type": "refusal", "refusal": text})
        await self._emit("response.output_item.done", output_index=index, item=item)
        return item

    async def replay(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Finished output items (a buffered turn's) as a valid event sequence; returns them as streamed."""
        for item in items:
            kind = item.get("type")
            if kind == "message":
                parts = item.get("content") or []
                refused = next((p["refusal"] for p in parts if p.get("type") == "refusal"), None)
                if refused is not None:
                    await self.refusal(str(refused))
                else:
                    text = "".join(str(p.get("text", "")) for p in parts)
                    await self.text(text, str(item.get("status") or "completed"))
            elif kind == "function_call":
                await self.function_call(item)
            else:
                await self.done_item(await self.add_item(item), item)
        return [item for item in self.output if item is not None]

    async def heartbeat(self) -> None:
        """Re-sent while tools run, so clients and proxies see the response is alive."""
        await self._emit("response.in_progress", response=self._snapshot("in_progress"))

    async def keepalive(self) -> None:
        """An SSE comment: keeps idle-timeout proxies from cutting a slow continuation; clients ignore it."""
        await self.out.write(b": keepalive\n\n")

    async def end(self, body: dict[str, Any]) -> None:
        await self._emit(f"response.{body['status']}", response=body)
