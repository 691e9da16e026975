import { type RecordedUpload, sendJson, startUploadServer } from './upload-server.js';

/** Docling Serve's `ConvertDocumentResponse` for one file (`POST /v1/convert/file`). */
export function doclingAnswer(filename: string, md: string, status = 'success', errors: unknown[] = []) {
  return {
    document: {
      filename,
      md_content: md,
      json_content: null,
      html_content: null,
      text_content: null,
      doctags_content: null,
    },
    status,
    errors,
    processing_time: 0.42,
    timings: {},
  };
}

export type DoclingReply = { status: number; body: unknown };

/** A fake Docling Serve: `POST /v1/convert/file` answers with `reply(upload)`, `GET /health` → `{status: ok}`. */
export async function startFakeDocling(reply: (upload: RecordedUpload) => DoclingReply) {
  return startUploadServer((req, res) => {
    if (req.method === 'GET' && req.path === '/health') return sendJson(res, 200, { status: 'ok' });
    if (req.method === 'POST' && req.path === '/v1/convert/file') {
      const r = reply(req);
      return sendJson(res, r.status, r.body);
    }
    sendJson(res, 404, { detail: 'Not Found' });
  });
}
