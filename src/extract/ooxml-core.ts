import { strFromU8, unzipSync } from 'fflate';
import { toIsoDate } from './dates.js';

export type CoreProperties = {
  title?: string;
  subject?: string;
  authors?: string[];
  created_at?: string;
};

/** Reads `docProps/core.xml` (Dublin Core) of an OOXML package; only that entry is inflated. */
export function readCoreProperties(zip: Uint8Array): CoreProperties {
  let xml: string | undefined;
  try {
    const files = unzipSync(zip, { filter: (f) => f.name === 'docProps/core.xml' });
    const raw = files['docProps/core.xml'];
    if (raw) xml = strFromU8(raw);
  } catch {
    return {};
  }
  return xml ? corePropertiesFromXml(xml) : {};
}

/** The Dublin Core fields of a `docProps/core.xml` Kilde keeps. */
export function corePropertiesFromXml(xml: string): CoreProperties {
  const out: CoreProperties = {};
  const title = element(xml, 'dc:title');
  const subject = element(xml, 'dc:subject');
  const creator = element(xml, 'dc:creator');
  const created = toIsoDate(element(xml, 'dcterms:created'));
  if (title) out.title = title;
  if (subject) out.subject = subject;
  if (creator) out.authors = splitAuthors(creator);
  if (created) out.created_at = created;
  return out;
}

/** Several authors are conventionally separated by `;` in `dc:creator`. */
export function splitAuthors(value: string): string[] {
  return value
    .split(/;/)
    .map((a) => a.trim())
    .filter((a) => a.length > 0);
}

function element(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`).exec(xml);
  const text = m?.[1] ? decodeXml(m[1]).trim() : '';
  return text === '' ? undefined : text;
}

export function decodeXml(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, e: string) => {
    const lower = e.toLowerCase();
    if (lower.startsWith('#x')) return String.fromCodePoint(Number.parseInt(lower.slice(2), 16));
    if (lower.startsWith('#')) return String.fromCodePoint(Number.parseInt(lower.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[lower] ?? e;
  });
}
