import { z } from 'zod';
import { joinUrl } from '../net/join-url.js';
import { toIsoDate } from './dates.js';
import { extractionFailed, toDocument } from './document.js';
import type { ExtractedDocument, Extractor } from './extractor.js';
import { detectFileType } from './file-type.js';
import { postFile, probeUrl, upstreamVariant } from './http-upload.js';
import { joinPages, type ReadContent } from './inprocess/content.js';
import { splitAuthors } from './ooxml-core.js';

export interface KreuzbergOptions {
  baseUrl: string;
  apiKey: string;
  config?: Record<string, unknown> | undefined;
  timeoutMs: number;
  fetch?: typeof fetch;
}

const table = z.object({ markdown: z.string().nullish(), page_number: z.number().nullish() });
const result = z.object({
  content: z.string(),
  mime_type: z.string().nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  tables: z.array(table).nullish(),
  detected_languages: z.array(z.string()).nullish(),
  pages: z.array(z.object({ page_number: z.number(), content: z.string() })).nullish(),
});
const success = z.array(result);
const failure = z.object({ error_type: z.string().optional(), message: z.string() });

/** `sidecar-http`: the Kreuzberg HTTP API (`POST /extract`, multipart `files`, JSON array back). */
export function createKreuzbergExtractor(opts: KreuzbergOptions): Extractor {
  const f = opts.fetch ?? fetch;
  const auth: Record<string, string> = opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {};
  return {
    name: 'sidecar-http',
    acceptsProfile: false,
    async extract(file, options) {
      const mime = file.mimeType ?? (await detectFileType(file.path, file.filename)).mime;
      const res = await postFile({
        upstream: 'Extraction sidecar',
        url: joinUrl(opts.baseUrl, 'extract'),
        fileField: 'files',
        file,
        mime,
        fields: opts.config ? [['config', JSON.stringify(opts.config)]] : [],
        headers: auth,
        timeoutMs: opts.timeoutMs,
        signal: options?.signal,
        fetch: f,
      });
      if (!res.ok) {
        const err = failure.safeParse(res.json);
        const message = err.success ? err.data.message : `Extraction sidecar answered ${res.status}`;
        throw extractionFailed(message, upstreamVariant(res.status));
      }
      const parsed = success.safeParse(res.json);
      if (!parsed.success)
        throw extractionFailed(
          'Extraction sidecar sent an unexpected answer',
          'upstreamFailed',
          parsed.error,
        );
      return parsed.data.map((r) => toExtracted(r, mime));
    },
    probe: (signal) => probeUrl(joinUrl(opts.baseUrl, 'health'), signal, f, auth),
  };
}

function toExtracted(r: z.infer<typeof result>, fallbackMime: string): ExtractedDocument {
  const pages = r.pages && r.pages.length > 0 ? joinPages(r.pages.map((p) => p.content)) : undefined;
  let text = pages?.text ?? r.content.trim();
  // Kreuzberg reports tables beside the text; append the ones the text does not already carry.
  for (const t of r.tables ?? []) {
    if (t.markdown && !squash(text).includes(squash(t.markdown))) text += `\n\n${t.markdown.trim()}`;
  }
  const content: ReadContent = { text, metadata: metadataOf(r.metadata ?? {}) };
  if (pages) content.pages = pages.pages;
  const reported = [...(r.detected_languages ?? [])];
  if (reported.length === 0 && typeof r.metadata?.language === 'string') reported.push(r.metadata.language);
  return toDocument(content, r.mime_type ?? fallbackMime, reported);
}

const squash = (s: string) => s.replace(/\s+/g, '');

function metadataOf(m: Record<string, unknown>): ReadContent['metadata'] {
  const str = (...keys: string[]) => {
    for (const k of keys) {
      const v = m[k];
      if (typeof v === 'string' && v.trim() !== '') return v.trim();
    }
    return undefined;
  };
  const out: ReadContent['metadata'] = {};
  const title = str('title');
  const subject = str('subject');
  if (title) out.title = title;
  if (subject) out.subject = subject;
  const authors = Array.isArray(m.authors)
    ? m.authors.filter((a): a is string => typeof a === 'string' && a.trim() !== '')
    : splitAuthors(str('author', 'created_by') ?? '');
  if (authors.length > 0) out.authors = authors;
  const created = toIsoDate(str('created_at', 'creation_date', 'date'));
  if (created) out.created_at = created;
  const pages = m.pages as { total_count?: unknown } | undefined;
  const pageCount = typeof m.page_count === 'number' ? m.page_count : pages?.total_count;
  if (typeof pageCount === 'number') out.page_count = pageCount;
  return out;
}
