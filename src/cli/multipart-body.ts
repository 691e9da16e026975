import { randomBytes } from 'node:crypto';

/*
 * A `multipart/form-data` body built from bytes already in memory, for `kilde ingest --url`'s job
 * batches of small files: one buffer, sent as is. `FormData` with a Blob per file sends each file
 * through a web stream of its own (its file read again, chunk by chunk): for 256 small files that was
 * most of the client's CPU. The encoding is the one `fetch` gives a `FormData` (the HTML standard's):
 * a field's name and a file's name escape `"`, CR and LF as %22, %0D and %0A; a field's value has its
 * line breaks as CRLF.
 */

export type FormPart = { name: string; value: string } | { name: string; filename: string; data: Uint8Array };

const escapeName = (s: string) => s.replace(/\n/g, '%0A').replace(/\r/g, '%0D').replace(/"/g, '%22');
const crlf = (s: string) => s.replace(/\r(?!\n)|(?<!\r)\n/g, '\r\n');

/** The body and its content type (with a random boundary). */
export function multipartBody(parts: readonly FormPart[]): { body: Buffer; contentType: string } {
  const boundary = `----kilde-${randomBytes(16).toString('hex')}`;
  const chunks: Uint8Array[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(p.name)}"`;
    if ('data' in p) {
      head += `; filename="${escapeName(p.filename)}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
      chunks.push(Buffer.from(head), p.data, Buffer.from('\r\n'));
    } else chunks.push(Buffer.from(`${head}\r\n\r\n${crlf(p.value)}\r\n`));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
