import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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

/** A real loopback HTTP server for fake upstreams that receive multipart uploads. */
export async function startUploadServer(handler: UploadHandler): Promise<UploadServer> {
  let current = handler;
  const requests: RecordedUpload[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const path = new URL(req.url ?? '/', 'http://fake').pathname;
    const rec: RecordedUpload = {
      method: req.method ?? 'GET',
      path,
      headers: req.headers,
      fields: {},
      files: [],
    };
    if (String(req.headers['content-type']).startsWith('multipart/form-data')) {
      // The platform's own multipart parser (undici) reads back exactly what was sent.
      const form = await new Request('http://fake/', {
        method: 'POST',
        headers: { 'content-type': String(req.headers['content-type']) },
        body: raw,
      }).formData();
      for (const [name, value] of form.entries()) {
        if (typeof value === 'string') rec.fields[name] = [...(rec.fields[name] ?? []), value];
        else
          rec.files.push({
            field: name,
            filename: value.name,
            type: value.type,
            bytes: Buffer.from(await value.arrayBuffer()),
          });
      }
    }
    requests.push(rec);
    try {
      await current(rec, res);
    } catch (err) {
      res.statusCode = 500;
      res.end(String(err));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    setHandler(h) {
      current = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
}
