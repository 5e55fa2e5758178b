// Connect errors in plain words: what happened and what the person can do about it, followed by the server's own
// message (which names the field or resource). Raw codes never reach the screen alone.
import { Code, ConnectError } from "@connectrpc/connect";

const WORDS: Partial<Record<Code, string>> = {
  [Code.PermissionDenied]: "You do not have permission to do this.",
  [Code.Unauthenticated]: "Your session has ended. Sign in again to continue.",
  [Code.NotFound]: "It was not found: it may have been deleted, or you may not have access to it.",
  [Code.AlreadyExists]: "Something with that name already exists.",
  [Code.InvalidArgument]: "Some of what you entered was not accepted.",
  [Code.FailedPrecondition]: "This cannot be done in the current state.",
  [Code.ResourceExhausted]: "A limit or quota was reached.",
  [Code.Unavailable]: "The server could not be reached. Check your connection and try again.",
  [Code.DeadlineExceeded]: "The server took too long to answer. Try again.",
  [Code.Unimplemented]: "This server does not support that action.",
  [Code.Canceled]: "The request was cancelled.",
  [Code.Aborted]: "Someone else changed this at the same time. Reload and try again.",
  [Code.OutOfRange]: "A value is out of the allowed range.",
};

/** A sentence for a person, from whatever a call threw. */
export function plainWords(error: unknown): string {
  if (error instanceof ConnectError) {
    const words = WORDS[error.code] ?? "Something went wrong on the server.";
    const detail = error.rawMessage.trim();
    return detail && error.code !== Code.Unavailable ? `${words} (${detail})` : words;
  }
  if (error instanceof TypeError) {
    return "The server could not be reached. Check your connection and try again.";
  }
  return error instanceof Error ? error.message : "Something went wrong.";
}
