import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';

/**
 * BEIR's file formats (https://github.com/beir-cellar/beir, "Load a custom dataset"):
 * - queries: JSON Lines, one `{"_id": …, "text": …}` per line;
 * - qrels: tab-separated `query-id  corpus-id  score`, an optional header line first;
 * - corpus: JSON Lines, one `{"_id": …, "title": …, "text": …}` per line.
 * Ids are strings (a number is read as its decimal text, as BEIR's loaders do).
 */

/** A malformed evaluation input, with the line that is wrong (the CLI exits 2, the API answers 422). */
export class EvalInputError extends Error {
  override readonly name = 'EvalInputError';
}

export interface EvalQuery {
  id: string;
  text: string;
}

/** query id → (document or chunk id → grade). */
export type QrelsMap = Map<string, Map<string, number>>;

const id = z.union([z.string().min(1), z.number().transform(String)]);
const queryLine = z.object({ _id: id, text: z.string() });
const corpusLine = z.object({ _id: id, title: z.string().nullish(), text: z.string().nullish() });

export interface CorpusDocument {
  id: string;
  title: string;
  text: string;
}

function parseJsonLine<T>(schema: z.ZodType<T>, line: string, where: string): T {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    throw new EvalInputError(`${where}: not JSON`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new EvalInputError(
      `${where}: ${issue?.path.join('.') || 'line'} ${issue?.message ?? 'is invalid'}`,
    );
  }
  return parsed.data;
}

/** BEIR queries; blank lines are skipped; a repeated id is an error (the qrels could not tell them apart). */
export function parseQueries(text: string, name = 'queries'): EvalQuery[] {
  const out: EvalQuery[] = [];
  const seen = new Set<string>();
  for (const [i, line] of text.split(/\r?\n/).entries()) {
    if (line.trim() === '') continue;
    const q = parseJsonLine(queryLine, line, `${name} line ${i + 1}`);
    if (seen.has(q._id)) throw new EvalInputError(`${name} line ${i + 1}: query id "${q._id}" repeats`);
    seen.add(q._id);
    out.push({ id: q._id, text: q.text });
  }
  if (out.length === 0) throw new EvalInputError(`${name}: no queries`);
  return out;
}

/** BEIR qrels (TSV); the first line is a header when its score column is not a number. */
export function parseQrels(text: string, name = 'qrels'): QrelsMap {
  const qrels: QrelsMap = new Map();
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === '') continue;
    const cols = line.split('\t');
    const score = Number(cols[2]);
    if (cols.length < 3 || cols[2]?.trim() === '' || !Number.isFinite(score)) {
      if (i === 0) continue;
      throw new EvalInputError(`${name} line ${i + 1}: expected "query-id<TAB>corpus-id<TAB>score"`);
    }
    const [query, doc] = [cols[0]!.trim(), cols[1]!.trim()];
    if (query === '' || doc === '') throw new EvalInputError(`${name} line ${i + 1}: empty id`);
    const judged = qrels.get(query) ?? new Map<string, number>();
    judged.set(doc, score);
    qrels.set(query, judged);
  }
  if (qrels.size === 0) throw new EvalInputError(`${name}: no judgements`);
  return qrels;
}

/** BEIR corpus documents, read line by line (corpora run to gigabytes). */
export async function* readCorpus(path: string): AsyncGenerator<CorpusDocument> {
  const lines = createInterface({
    input: createReadStream(path, 'utf8'),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  let n = 0;
  for await (const line of lines) {
    n++;
    if (line.trim() === '') continue;
    const d = parseJsonLine(corpusLine, line, `corpus line ${n}`);
    yield { id: d._id, title: d.title ?? '', text: d.text ?? '' };
  }
}

/** A corpus document as the file `kilde eval --dataset` ingests: title line, blank line, text. */
export function documentText(doc: CorpusDocument): string {
  return doc.title.trim() === '' ? `${doc.text}\n` : `${doc.title}\n\n${doc.text}\n`;
}
