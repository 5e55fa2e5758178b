// Calls to the gateway's RAG surfaces ({rag_url}/files, /context) with the tab's console key (gatewayKey.ts).
// The gateway answers OpenAI-style JSON errors ({"error": {"message"}}); they reach the screen as a GatewayError
// carrying that message, so plainWords shows the gateway's own sentence.
import { dropGatewayKey, gatewayKey } from "./gatewayKey";

export class GatewayError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function failure(status: number, body: string): Promise<GatewayError> {
  let message = `The gateway refused the request (HTTP ${status}).`;
  try {
    const parsed = JSON.parse(body) as { error?: { message?: string } };
    if (parsed.error?.message) {
      message = `${message} ${parsed.error.message}`;
    }
  } catch {
    // not JSON: the status alone says it
  }
  return Promise.resolve(new GatewayError(status, message));
}

/** A JSON call to the gateway in a tenant; a 401 drops the held key so the next call mints a fresh one. */
export async function gatewayJson<T>(tenantId: string, url: string, init: { method?: string; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
  const key = await gatewayKey(tenantId);
  const answer = await fetch(url, {
    method: init.method ?? "GET",
    headers: {
      Authorization: `Bearer ${key}`,
      Accept: "application/json",
      ...(init.body === undefined ? {} : { "Content-Type": "application/json" }),
    },
    body: init.body === undefined ? null : JSON.stringify(init.body),
    signal: init.signal ?? null,
    credentials: "omit", // the gateway takes the key, never the console's cookie
  });
  const text = await answer.text();
  if (!answer.ok) {
    if (answer.status === 401) {
      dropGatewayKey(tenantId);
    }
    throw await failure(answer.status, text);
  }
  return JSON.parse(text) as T;
}

export interface UploadProgress {
  loaded: number;
  total: number;
}

/**
 * One multipart upload (XMLHttpRequest, because fetch has no upload progress in browsers yet), reporting the bytes
 * sent as they go; resolves with the gateway's JSON answer.
 */
export async function gatewayUpload<T>(
  tenantId: string,
  url: string,
  form: FormData,
  onProgress: (progress: UploadProgress) => void,
  signal?: AbortSignal,
): Promise<T> {
  const key = await gatewayKey(tenantId);
  return new Promise<T>((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", url);
    request.setRequestHeader("Authorization", `Bearer ${key}`);
    request.setRequestHeader("Accept", "application/json");
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) {
        onProgress({ loaded: event.loaded, total: event.total });
      }
    };
    request.onload = () => {
      if (request.status >= 200 && request.status < 300) {
        resolve(JSON.parse(request.responseText) as T);
      } else {
        if (request.status === 401) {
          dropGatewayKey(tenantId);
        }
        void failure(request.status, request.responseText).then(reject);
      }
    };
    request.onerror = () => { reject(new TypeError("The gateway could not be reached.")); };
    request.onabort = () => { reject(new DOMException("The upload was cancelled.", "AbortError")); };
    signal?.addEventListener("abort", () => { request.abort(); });
    request.send(form);
  });
}
