import { openAsBlob } from 'node:fs';
import type { Clock } from '../clock.js';
import { describeCause, type ErrorVariant } from '../errors.js';
import { type HttpAnswer, HttpFailure, httpRequest, jsonOf } from '../net/http.js';
import { extractionFailed } from './document.js';
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
  clock?: Clock | undefined;
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
  let answer: HttpAnswer;
  try {
    answer = await httpRequest(
      {
        url: req.url,
        method: 'POST',
        body: form,
        headers: { accept: 'application/json', ...req.headers },
        timeoutMs: req.timeoutMs,
        signal: req.signal,
      },
      { fetch: req.fetch, ...(req.clock ? { clock: req.clock } : {}) },
    );
  } catch (err) {
    if (!(err instanceof HttpFailure)) throw err;
    if (err.kind === 'timeout') {
      throw extractionFailed(
        `${req.upstream} did not answer within ${Math.round(req.timeoutMs / 1000)} s`,
        'upstreamTimeout',
        err,
      );
    }
    throw extractionFailed(
      `${req.upstream} unreachable: ${err.networkCode ?? describeCause(err.cause)}`,
      'upstreamFailed',
      err,
    );
  }
  return { status: answer.status, ok: answer.ok, json: jsonOf(answer), text: answer.text };
}

/** Upstream 4xx (the document was refused) stays the default 422; upstream 5xx is a bad gateway. */
export function upstreamVariant(status: number): ErrorVariant<'EXTRACTION_FAILED'> | undefined {
  return status >= 400 && status < 500 ? undefined : 'upstreamFailed';
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
