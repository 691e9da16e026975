import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { type RecordedRequest, startRecordingServer } from './recording-server.js';

export interface UploadedFile {
  field: string;
  filename: string;
  type: string;
  bytes: Buffer;
}

/** One request as it arrived: multipart bodies are parsed into fields and files (bytes intact). */
export interface RecordedUpload {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  fields: Record<string, string[]>;
  files: UploadedFile[];
}

export type UploadHandler = (req: RecordedUpload, res: ServerResponse) => void | Promise<void>;

export interface UploadServer {
  url: string;
  requests: RecordedUpload[];
  setHandler(handler: UploadHandler): void;
  close(): Promise<void>;
}

/** Parses a multipart body back into fields and files with the platform's own parser (undici). */
async function parseUpload(req: RecordedRequest): Promise<RecordedUpload> {
  const rec: RecordedUpload = {
    method: req.method,
    path: req.path,
    headers: req.headers,
    fields: {},
    files: [],
  };
  const type = String(req.headers['content-type']);
  if (!type.startsWith('multipart/form-data')) return rec;
  const form = await new Request('http://fake/', {
    method: 'POST',
    headers: { 'content-type': type },
    body: req.raw,
  }).formData();
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') rec.fields[name] = [...(rec.fields[name] ?? []), value];
    else {
      rec.files.push({
        field: name,
        filename: value.name,
        type: value.type,
        bytes: Buffer.from(await value.arrayBuffer()),
      });
    }
  }
  return rec;
}

/** A real loopback HTTP server for fake upstreams that receive multipart uploads. */
export async function startUploadServer(handler: UploadHandler): Promise<UploadServer> {
  let current = handler;
  const requests: RecordedUpload[] = [];
  const server = await startRecordingServer(async (req, res) => {
    const rec = await parseUpload(req);
    requests.push(rec);
    await current(rec, res);
  });
  return {
    url: server.url,
    requests,
    setHandler(h) {
      current = h;
    },
    close: server.close,
  };
}

export { sendJson } from './recording-server.js';
