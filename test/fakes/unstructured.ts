import { randomUUID } from 'node:crypto';
import { type RecordedUpload, sendJson, startUploadServer } from './upload-server.js';

/** One element of the Unstructured API's answer (`POST /general/v0/general`). */
export function unstructuredElement(
  type: string,
  text: string,
  metadata: {
    page_number?: number;
    languages?: string[];
    text_as_html?: string;
    category_depth?: number;
  } = {},
  filename = 'document.pdf',
) {
  return {
    type,
    element_id: randomUUID().replaceAll('-', ''),
    text,
    metadata: { filename, filetype: 'application/pdf', languages: ['eng'], ...metadata },
  };
}

export type UnstructuredReply = { status: number; body: unknown };

/** A fake Unstructured API: `POST /general/v0/general` answers with `reply(upload)`, `GET /healthcheck` as it does. */
export async function startFakeUnstructured(reply: (upload: RecordedUpload) => UnstructuredReply) {
  return startUploadServer((req, res) => {
    if (req.method === 'GET' && req.path === '/healthcheck') {
      return sendJson(res, 200, { healthcheck: 'HEALTHCHECK STATUS: EVERYTHING OK!' });
    }
    if (req.method === 'POST' && req.path === '/general/v0/general') {
      const r = reply(req);
      return sendJson(res, r.status, r.body);
    }
    sendJson(res, 404, { detail: 'Not Found' });
  });
}
