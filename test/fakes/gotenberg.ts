import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { extname } from 'node:path';
import { type RecordedUpload, startUploadServer, type UploadServer } from './upload-server.js';

/**
 * A fake Gotenberg (8.x) LibreOffice route: `POST /forms/libreoffice/convert` with multipart field
 * `files`, a PDF back (`application/pdf`, `Content-Disposition: attachment`). Like Gotenberg it
 * answers 400 in plain text when no file has an extension LibreOffice converts, and 404 for other
 * routes. What it converts to is a PDF the test chooses.
 */
export type GotenbergMode =
  | { kind: 'ok'; pdf: string | Buffer }
  | { kind: 'status'; status: number; text: string }
  | { kind: 'not-pdf' }
  | { kind: 'hang' };

export interface FakeGotenberg extends UploadServer {
  mode: GotenbergMode;
}

/** A subset of the extensions Gotenberg's LibreOffice module accepts. */
const EXTENSIONS = new Set([
  '.doc',
  '.docx',
  '.odt',
  '.rtf',
  '.txt',
  '.xls',
  '.xlsx',
  '.ods',
  '.ppt',
  '.pptx',
  '.odp',
]);

export async function startFakeGotenberg(mode: GotenbergMode): Promise<FakeGotenberg> {
  const state = { mode };
  const server = await startUploadServer(async (req: RecordedUpload, res: ServerResponse) => {
    if (req.method !== 'POST' || req.path !== '/forms/libreoffice/convert') {
      res.statusCode = 404;
      return void res.end('Not Found');
    }
    const files = req.files.filter(
      (f) => f.field === 'files' && EXTENSIONS.has(extname(f.filename).toLowerCase()),
    );
    if (files.length === 0) {
      res.statusCode = 400;
      res.setHeader('content-type', 'text/plain; charset=UTF-8');
      return void res.end(
        `Invalid form data: no form file found for extensions: ${[...EXTENSIONS].join(', ')}`,
      );
    }
    const m = state.mode;
    switch (m.kind) {
      case 'status':
        res.statusCode = m.status;
        res.setHeader('content-type', 'text/plain; charset=UTF-8');
        return void res.end(m.text);
      case 'hang':
        return new Promise<void>((resolve) => res.once('close', () => resolve()));
      case 'not-pdf':
        res.setHeader('content-type', 'text/html');
        return void res.end('<html>proxy error page</html>');
      case 'ok': {
        const pdf = typeof m.pdf === 'string' ? await readFile(m.pdf) : m.pdf;
        res.setHeader('content-type', 'application/pdf');
        res.setHeader('content-disposition', 'attachment; filename=converted.pdf');
        res.setHeader('gotenberg-trace', 'fake-trace');
        return void res.end(pdf);
      }
    }
  });
  return {
    ...server,
    get mode() {
      return state.mode;
    },
    set mode(m: GotenbergMode) {
      state.mode = m;
    },
  };
}
