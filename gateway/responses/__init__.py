"""The Responses API over Chat Completions: request translation and streaming events."""
