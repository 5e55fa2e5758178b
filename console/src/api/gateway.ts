// Uploads to a RAG ({rag_url}/files) with the tab's console key and upload progress; every other gateway call goes
// through gatewayKey.ts's gatewayFetch/gatewayJson. Errors are the same GatewayError either way.
import { dropGatewayKey, gatewayErrorOf, gatewayKey } from "./gatewayKey";

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
        reject(gatewayErrorOf(request.status, request.responseText));
      }
    };
    request.onerror = () => { reject(new TypeError("The gateway could not be reached.")); };
    request.onabort = () => { reject(new DOMException("The upload was cancelled.", "AbortError")); };
    signal?.addEventListener("abort", () => { request.abort(); });
    request.send(form);
  });
}
