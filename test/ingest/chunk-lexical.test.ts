import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { approximateTokenCounter } from '../../src/chunk/approx-counter.js';
import { createChunker } from '../../src/chunk/create-chunker.js';
import { createLexicalStage, type LexicalChunk } from '../../src/embed/bm25/lexical-stage.js';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { INGEST_POOL, type IngestTasks } from '../../src/ingest/pool.js';
import { createPooledChunkLexical, kept, type LexicalDoc } from '../../src/ingest/pool-chunk-lexical.js';
import { WorkerPool } from '../../src/pool/worker-pool.js';

/*
 * Chunking and the lexical stage in one pool task (what a pass does with small documents) give the
 * chunks the chunker gives and, for each chunk kept as a point, the terms and BM25 vector the lexical
 * stage gives that point (its document's title and languages, its own headings).
 */
const settings = { mode: 'markdown' as const, size: 40, overlap: 5 };
const pool = new WorkerPool<IngestTasks>(
  {
    ...INGEST_POOL,
    size: 1,
    heapMb: 256,
    timeoutMs: 60_000,
    setup: { limits: DEFAULT_LIMITS, chunking: { settings, counter: 'approximate' } },
  },
  { log: pino({ level: 'silent' }) },
);
afterAll(() => pool.close());

const docs: LexicalDoc[] = [
  {
    input: { text: '# Rules\n\nThe committee meets every spring.\n\n## Voting\n\nMembers vote by hand.' },
    title: 'Handbook',
    languages: ['en'],
  },
  {
    input: { text: 'Udvalget mødes hvert forår, og medlemmerne stemmer ved håndsoprækning.\n\n\n\n' },
    languages: ['da', 'en'],
  },
  // No detected language: the fallback decides unless stop words do.
  { input: { text: 'Zyx qwv 1234.' }, languages: [] },
];

/** What the pipeline's separate stages make of the same documents. */
async function apart(sparse: boolean) {
  const chunker = createChunker(settings, approximateTokenCounter());
  const chunks = docs.map((d) => chunker.chunk({ ...d.input, metadata: { languages: [], mime_type: '' } }));
  const items: LexicalChunk[] = chunks.flatMap((list, k) =>
    list.filter(kept).map((c) => ({
      content: c.content,
      // As chunkMeta sets a point's meta and pipeline-encode.ts reads it.
      context: { title: docs[k]!.title, headers: c.headers?.length ? [...c.headers] : undefined },
      languages: docs[k]!.languages?.length ? docs[k]!.languages : undefined,
      fallback: 'danish',
    })),
  );
  const lexical = await createLexicalStage({ sparseModel: sparse ? 'Qdrant/bm25' : undefined }).analyse(
    items,
  );
  return { chunks, lexical };
}

describe('chunk-lexical pool task', () => {
  for (const sparse of [false, true]) {
    it(`gives the chunks and lexical side of the separate stages (sparse vectors ${sparse ? 'on' : 'off'})`, async () => {
      const together = await createPooledChunkLexical(pool, { fallback: 'danish', sparse })(docs);
      const expected = await apart(sparse);
      expect(together.chunks).toEqual(expected.chunks);
      expect(together.lexical).toEqual(expected.lexical);
      expect(together.lexical.lexical.length).toBeGreaterThan(2);
      expect(together.analyseSeconds).toBeGreaterThanOrEqual(0);
    });
  }

  it("answers a chunk that is its document's text between its offsets without that text", async () => {
    const raw = await pool.run({ kind: 'chunk-lexical', docs, fallback: 'danish', sparse: false });
    const expected = (await apart(false)).chunks;
    raw.chunks.forEach((list, k) => {
      list.forEach((c, i) => {
        const full = expected[k]![i]!;
        const slice = docs[k]!.input.text.slice(full.char_start, full.char_end);
        expect(c.content).toBe(full.content === slice ? undefined : full.content);
      });
    });
    expect(raw.chunks.flat().filter((c) => c.content === undefined).length).toBeGreaterThan(0);
  });
});
