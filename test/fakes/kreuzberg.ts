import { type RecordedUpload, sendJson, startUploadServer } from './upload-server.js';

/** One Kreuzberg `ExtractionResult`, as `POST /extract` serialises it (snake_case, metadata flattened). */
export interface KreuzbergResult {
  content: string;
  mime_type: string;
  metadata: Record<string, unknown>;
  tables: { cells: string[][]; markdown: string; page_number: number }[];
  detected_languages?: string[] | null;
  pages?: { page_number: number; content: string; tables: unknown[]; images: unknown[] }[];
}

export type KreuzbergReply =
  | { status: 200; body: KreuzbergResult[] }
  | { status: number; body: KreuzbergErrorBody };

export interface KreuzbergErrorBody {
  error_type: string;
  message: string;
  traceback: string | null;
  status_code: number;
}

export function kreuzbergError(status: number, errorType: string, message: string): KreuzbergReply {
  return { status, body: { error_type: errorType, message, traceback: null, status_code: status } };
}

/** A fake Kreuzberg API server: `POST /extract` answers with `reply(upload)`, `GET /health` as Kreuzberg does. */
export async function startFakeKreuzberg(reply: (upload: RecordedUpload) => KreuzbergReply) {
  return startUploadServer((req, res) => {
    if (req.method === 'GET' && req.path === '/health')
      return sendJson(res, 200, { status: 'healthy', version: '4.0.0' });
    if (req.method === 'POST' && req.path === '/extract') {
      if (req.files.length === 0) {
        const e = kreuzbergError(400, 'ValidationError', 'No files provided for extraction');
        return sendJson(res, e.status, e.body);
      }
      const r = reply(req);
      return sendJson(res, r.status, r.body);
    }
    sendJson(res, 404, { error_type: 'NotFound', message: 'Not Found', traceback: null, status_code: 404 });
  });
}
