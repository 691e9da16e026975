import { openAsBlob } from 'node:fs';
import { extractionFailed, reasonOf } from './document.js';
import type { SourceFile } from './extractor.js';

export interface UploadRequest {
  /** Upstream name for messages, e.g. `Extraction sidecar`. */
  upstream: string;
  url: string;
  fileField: string;
  file: SourceFile;
  mime: string;
  fields?: readonly (readonly [string, string])[];
  headers?: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  fetch: typeof fetch;
}

export interface UploadResponse {
  status: number;
  ok: boolean;
  /** Parsed JSON, or undefined when the body is not JSON. */
  json: unknown;
  text: string;
}

/**
 * POSTs one file as multipart/form-data. The part is a file-backed Blob, so the document is
 * streamed from disk. Network failures and time-outs become EXTRACTION_FAILED (502 / 504).
 */
export async function postFile(req: UploadRequest): Promise<UploadResponse> {
  const form = new FormData();
  for (const [name, value] of req.fields ?? []) form.append(name, value);
  form.append(req.fileField, await openAsBlob(req.file.path, { type: req.mime }), req.file.filename);
  const timeout = AbortSignal.timeout(req.timeoutMs);
  const signal = req.signal ? AbortSignal.any([timeout, req.signal]) : timeout;
  let res: Response;
  let text: string;
  try {
    res = await req.fetch(req.url, {
      method: 'POST',
      body: form,
      headers: { accept: 'application/json', ...req.headers },
      signal,
    });
    text = await res.text();
  } catch (err) {
    if (timeout.aborted) {
      throw extractionFailed(
        `${req.upstream} did not answer within ${Math.round(req.timeoutMs / 1000)} s`,
        504,
        err,
      );
    }
    if (req.signal?.aborted) throw err;
    throw extractionFailed(`${req.upstream} unreachable: ${networkReason(err)}`, 502, err);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, ok: res.ok, json, text };
}

/** Upstream 4xx (the document was refused) stays 422; upstream 5xx is a bad gateway. */
export function upstreamStatus(status: number): number {
  return status >= 400 && status < 500 ? 422 : 502;
}

/** GETs a health URL; resolves on 2xx, throws a short reason otherwise (used by readiness probes). */
export async function probeUrl(
  url: string,
  signal: AbortSignal,
  f: typeof fetch,
  headers: Record<string, string> = {},
) {
  const res = await f(url, { signal, headers });
  await res.body?.cancel();
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
}

/** `fetch failed` says nothing; its cause (ECONNREFUSED ...) does. */
function networkReason(err: unknown): string {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : reasonOf(cause ?? err);
}
