import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { connect } from '@lancedb/lancedb';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { LexicalAnalyzer } from '../../src/embed/bm25/analysis.js';
import { type ChunkMeta, type IndexPoint, pointId } from '../../src/index/contract.js';
import { createLanceIndex, type LanceIndexOptions } from '../../src/index/lancedb.js';
import { filterToSql } from '../../src/index/lancedb-filter.js';
import { lanceSchema } from '../../src/index/lancedb-rows.js';
import { ftsIndex } from '../../src/index/lancedb-schema-check.js';
import { engineFor, type IndexSettings, openIndex } from '../../src/index/open.js';
import type { VectorIndex } from '../../src/index/store.js';
import { ManualClock } from '../helpers/clock.js';
import { eventually } from '../helpers/eventually.js';
import { tempDirs } from '../helpers/temp-dirs.js';
import { runVectorIndexContract } from './contract-suite.js';

const log = pino({ level: 'silent' });
const tempDir = tempDirs('kilde-lance-');

function settings(dir: string, extra: Partial<IndexSettings> = {}): IndexSettings {
  return { uri: dir, collection: 'ingestion_files', sparse: true, timeoutMs: 10_000, ...extra };
}

runVectorIndexContract('lancedb', async (opts) =>
  createLanceIndex(
    settings(await tempDir(), { sparse: opts.sparse, ...(opts.denseDim ? { denseDim: opts.denseDim } : {}) }),
    { log },
  ),
);

function chunk(fileId: string, splitId: number, content: string, dense?: number[]): IndexPoint {
  const meta: ChunkMeta = {
    collection_name: 'c',
    collection_type: 'knowledge',
    file_id: fileId,
    ingest_version: 'v1',
    split_id: splitId,
  };
  return { id: pointId(fileId, 'v1', splitId), content, meta, ...(dense ? { dense } : {}) };
}

describe('LanceDB adapter', () => {
  const open: VectorIndex[] = [];
  async function index(
    dir: string,
    extra: Partial<IndexSettings> = {},
    options: LanceIndexOptions = {},
  ): Promise<VectorIndex> {
    const i = await createLanceIndex(settings(dir, extra), { log }, options);
    open.push(i);
    await i.ensureCollection();
    return i;
  }
  afterEach(async () => {
    await Promise.all(open.splice(0).map((i) => i.close()));
  });

  it('quotes filter values so they stay values', () => {
    expect(filterToSql({ collectionNames: ["a'b", 'c\\d'], notIngestVersion: "v'1" })).toBe(
      "collection_name IN ('a''b', 'c\\d') AND (ingest_version IS NULL OR ingest_version <> 'v''1')",
    );
    expect(filterToSql({ languages: ["da'"] })).toBe("array_has_any(languages, ['da'''])");
    expect(filterToSql({ collectionNames: [] })).toBe('false');
    expect(filterToSql({})).toBeUndefined();
  });

  it('scrolls in (file_id, split_id) order', async () => {
    const i = await index(await tempDir());
    await i.upsert([chunk('b', 2, 'x'), chunk('a', 10, 'x'), chunk('b', 1, 'x'), chunk('a', 2, 'x')]);
    const first = await i.scroll({}, { limit: 3 });
    const rest = await i.scroll({}, { limit: 3, ...(first.next ? { cursor: first.next } : {}) });
    const order = [...first.points, ...rest.points].map((p) => `${p.meta.file_id}${p.meta.split_id}`);
    expect(order).toEqual(['a2', 'a10', 'b1', 'b2']);
    expect(rest.next).toBeUndefined();
    await expect(i.scroll({}, { limit: 3, cursor: 'bogus' })).rejects.toThrow('invalid scroll cursor');
  });

  it('scores hybrid hits with RRF, k = 60, divided by its maximum (1 = first in both lists)', async () => {
    const i = await index(await tempDir(), { denseDim: 2 });
    await i.upsert([chunk('f', 0, 'apples and pears', [1, 0]), chunk('f', 1, 'bananas', [0.8, 0.2])]);
    const hits = await i.searchHybrid({ text: 'bananas', dense: [1, 0] }, {}, 5);
    expect(hits.map((h) => h.content)).toEqual(['bananas', 'apples and pears']);
    expect(hits[0]!.score).toBeCloseTo((1 / 62 + 1 / 61) / (2 / 61), 12);
    expect(hits[1]!.score).toBeCloseTo(1 / 61 / (2 / 61), 12);
  });

  it('matches the analysed terms points and queries carry, each query term once', async () => {
    const analyzer = new LexicalAnalyzer('english');
    const text = 'Borgerne stemte ved valget til kommunerne';
    const i = await index(await tempDir());
    await i.upsert([
      { ...chunk('f', 0, text), lexical: analyzer.document(text, 'danish').terms.join(' ') },
      chunk('g', 0, 'Valget i dag: borgerne stemmer'),
    ]);
    // The Danish analysis of the query meets the Danish stems of the first chunk only.
    const query = analyzer.query('borger valg', ['danish']);
    expect(query.terms).toEqual(['borg', 'valg']);
    expect(
      (await i.searchLexical({ text: 'borger valg', terms: query.terms }, {}, 5)).map((h) => h.content),
    ).toEqual([text]);
    // A point without analysed terms is indexed by its lower-cased words, a query without terms
    // likewise; the analysed chunk holds stems ("borger"), not the word.
    expect((await i.searchLexical({ text: 'BORGERNE stemmer' }, {}, 5)).map((h) => h.meta.file_id)).toEqual([
      'g',
    ]);
    // A term repeated in the query counts once: the same scores as the term alone.
    const once = await i.searchLexical({ text: '', terms: ['valg'] }, {}, 5);
    const twice = await i.searchLexical({ text: '', terms: ['valg', 'valg'] }, {}, 5);
    expect(twice.map((h) => h.score)).toEqual(once.map((h) => h.score));
    expect(await i.searchLexical({ text: 'ignored', terms: [] }, {}, 5)).toEqual([]);
  });

  it('keeps the stored content as written: the lexical side is only indexed', async () => {
    const i = await index(await tempDir());
    await i.upsert([{ ...chunk('f', 0, 'Plain text.'), lexical: 'title head plain text' }]);
    const [hit] = await i.searchLexical({ text: '', terms: ['title'] }, {}, 5);
    expect(hit?.content).toBe('Plain text.');
    expect(Object.keys(hit?.meta ?? {})).not.toContain('lexical');
  });

  it('records the fallback language and says when SPARSE_LANGUAGE changes on an existing table', async () => {
    const dir = await tempDir();
    const first = await index(dir, { language: 'english' });
    expect((await first.describe()).fallbackLanguages).toEqual(['english']);
    await first.close();
    const lines: string[] = [];
    const capture = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
    const second = await createLanceIndex(settings(dir, { language: 'danish' }), { log: capture });
    open.push(second);
    await second.ensureCollection();
    expect(lines.join('\n')).toContain('SPARSE_LANGUAGE is now danish');
    expect((await second.describe()).fallbackLanguages).toEqual(['english', 'danish']);
  });

  it('keeps searching a table made before the lexical column, over content, and says so', async () => {
    const dir = await tempDir();
    const db = await connect(dir);
    const table = await db.createEmptyTable('ingestion_files', lanceSchema(undefined, 'content'));
    await table.createIndex('content', { config: ftsIndex('danish') });
    table.close();
    db.close();
    const lines: string[] = [];
    const capture = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
    const old = await createLanceIndex(settings(dir, { language: 'english' }), { log: capture });
    open.push(old);
    await old.ensureCollection();
    const text = 'Borgerne stemte ved valget';
    await old.upsert([{ ...chunk('f', 0, text), lexical: 'ignored here' }]);
    // LanceDB's own Danish stemming, over the raw query text.
    expect(
      (await old.searchLexical({ text: 'borger valg', terms: ['x'] }, {}, 5)).map((h) => h.content),
    ).toEqual([text]);
    const log = lines.join('\n');
    expect(log).toContain('predates per-document lexical analysis');
    expect(log).toContain('full-text index was built for another language');
    expect((await old.describe()).hasSparse).toBe(true);
  });

  it('keeps the full-text index current with periodic optimize', async () => {
    const dir = await tempDir();
    const i = await index(dir, {}, { optimizeEvery: 3 });
    for (let n = 0; n < 3; n++) await i.upsert([chunk('f', n, `fresh words number ${n}`)]);
    expect((await i.searchLexical({ text: 'fresh' }, {}, 10)).length).toBe(3);
    await i.close();
    const table = await (await connect(dir)).openTable('ingestion_files');
    const fts = (await table.listIndices()).find((x) => x.columns.join() === 'lexical');
    expect(fts).toBeDefined();
    expect(await table.indexStats(fts!.name)).toMatchObject({ numIndexedRows: 3, numUnindexedRows: 0 });
    table.close();
  });

  it("spaces optimizes out by the previous one's duration, then runs the deferred one unprompted", async () => {
    const unindexed = async (dir: string) => {
      const table = await (await connect(dir)).openTable('ingestion_files');
      const fts = (await table.listIndices()).find((x) => x.columns.join() === 'lexical');
      const stats = await table.indexStats(fts!.name);
      table.close();
      return stats?.numUnindexedRows;
    };
    // Every clock read moves time 10 ms, so each optimize "takes" 10 ms; a spacing of 1e9 times that
    // is far beyond what one Node timer can hold (2^31-1 ms).
    const clock = new ManualClock({ tick: 10 });
    const dir = await tempDir();
    const i = await index(dir, {}, { optimizeEvery: 1, optimizeSpacing: 1e9, clock });
    await i.upsert([chunk('a', 0, 'first words')]); // optimize #1 runs behind this write
    await i.upsert([chunk('b', 0, 'second words')]); // due, but deferred by the spacing
    expect(clock.pending).toBe(1);
    expect(clock.nextDelay()).toBeGreaterThan(2 ** 31);
    expect(await unindexed(dir)).toBe(1);
    expect((await i.searchLexical({ text: 'second' }, {}, 5)).length).toBe(1);
    // Once the spacing has passed, the deferred optimize runs with no further write to trigger it.
    clock.advance(clock.nextDelay()!);
    expect(clock.pending).toBe(0);
    await i.close(); // waits for the queued optimize
    expect(await unindexed(dir)).toBe(0);
  });

  it('ranks rows not yet in the full-text index by score with the indexed ones, in one query', async () => {
    const dir = await tempDir();
    // Indexed: one weak match among fillers (folded in by the optimize after the first commit).
    const first = await index(dir, {}, { optimizeEvery: 1 });
    await first.upsert([
      chunk('old', 0, `gamma ${'pad '.repeat(30)}`),
      ...Array.from({ length: 20 }, (_, n) => chunk('old', n + 1, `filler ${n}`)),
    ]);
    await first.close();
    // Not yet indexed: many weak matches written first, then the strong ones, then weak ones again.
    const later = await index(dir, {}, { optimizeEvery: 1000, optimizeRows: 1_000_000 });
    const weak = (file: string) =>
      Array.from({ length: 40 }, (_, n) => chunk(file, n, `gamma ${'pad '.repeat(30)} ${n}`));
    await later.upsert(weak('weak1'));
    await later.upsert([0, 1, 2].map((n) => chunk('strong', n, `gamma gamma gamma ${n}`)));
    await later.upsert(weak('weak2'));
    const table = await (await connect(dir)).openTable('ingestion_files');
    const fts = (await table.listIndices()).find((x) => x.columns.join() === 'lexical');
    expect(await table.indexStats(fts!.name)).toMatchObject({ numIndexedRows: 21, numUnindexedRows: 83 });
    table.close();
    // Every match, ranked: what fetching all of them and sorting here (as Kilde once did) gives.
    const all = await later.searchLexical({ text: 'gamma' }, {}, 200);
    expect(all).toHaveLength(84);
    expect(all.map((h) => h.score)).toEqual(all.map((h) => h.score).sort((a, b) => b - a));
    const ids = (hits: { id: string }[]) => hits.map((h) => h.id).sort();
    // The strong matches, written after 40 weaker ones, are in the top 4 (with the indexed one).
    const top = await later.searchLexical({ text: 'gamma' }, {}, 4);
    expect(ids(top)).toEqual(ids(all.slice(0, 4)));
    expect(top.filter((h) => h.meta.file_id === 'strong')).toHaveLength(3);
    expect(top.map((h) => h.score)).toEqual(all.slice(0, 4).map((h) => h.score));
  });

  it('ranks matches by score while the full-text index is still empty (a new table, never optimized)', async () => {
    const i = await index(await tempDir(), {}, { optimizeEvery: 1000, optimizeRows: 1_000_000 });
    const weak = (file: string) =>
      Array.from({ length: 30 }, (_, n) => chunk(file, n, `crane number ${'pad '.repeat(20)} ${n}`));
    await i.upsert(weak('weak1'));
    await i.upsert([0, 1, 2].map((n) => chunk('strong', n, `crane number five ${n}`)));
    await i.upsert(weak('weak2'));
    const hits = await i.searchLexical({ text: 'crane number five' }, {}, 3);
    expect(hits.map((h) => h.meta.file_id)).toEqual(['strong', 'strong', 'strong']);
  });

  it('skips points without a dense vector in dense search', async () => {
    const i = await index(await tempDir(), { denseDim: 2 });
    await i.upsert([chunk('f', 0, 'with vector', [1, 0]), chunk('f', 1, 'without vector')]);
    expect((await i.searchDense([1, 0], {}, 10)).map((h) => h.content)).toEqual(['with vector']);
    expect((await i.searchLexical({ text: 'without' }, {}, 10)).map((h) => h.content)).toEqual([
      'without vector',
    ]);
  });

  it('rejects vectors of the wrong size, naming both sizes', async () => {
    const i = await index(await tempDir(), { denseDim: 3 });
    await expect(i.upsert([chunk('f', 0, 'x', [1, 0])])).rejects.toThrow(/2 dimensions.*expects 3/);
    await expect(i.searchDense([1, 0], {}, 1)).rejects.toThrow(/2 dimensions.*expects 3/);
  });

  it('fails loudly when the table on disk has another dense size or none', async () => {
    const dir = await tempDir();
    await (await index(dir, { denseDim: 3 })).close();
    const other = await createLanceIndex(settings(dir, { denseDim: 4 }), { log });
    open.push(other);
    await expect(other.ensureCollection()).rejects.toThrow(/text-dense of size 3, but EMBEDDING_DIM is 4/);
    const lexDir = await tempDir();
    await (await index(lexDir)).close();
    const dense = await createLanceIndex(settings(lexDir, { denseDim: 4 }), { log });
    open.push(dense);
    await expect(dense.ensureCollection()).rejects.toThrow(/no text-dense vector.*EMBEDDING_DIM is 4/);
  });

  it('describes a missing table without creating it', async () => {
    const dir = await tempDir();
    const i = await createLanceIndex(settings(dir), { log });
    open.push(i);
    expect(await i.describe()).toEqual({ exists: false, hasSparse: false, vectorNames: [] });
    await expect(i.ping()).rejects.toThrow(/does not exist/);
    expect(await (await connect(dir)).tableNames()).toEqual([]);
  });

  it('opens LanceDB for paths and file:// URIs, Qdrant for http(s)', async () => {
    expect(engineFor('http://qdrant:6333')).toBe('qdrant');
    expect(engineFor('HTTPS://q.example')).toBe('qdrant');
    expect(engineFor('/var/lib/kilde')).toBe('lancedb');
    const dir = await tempDir();
    const viaUrl = await openIndex(settings(pathToFileURL(dir).href), { log });
    open.push(viaUrl);
    expect(viaUrl.engine).toBe('lancedb');
    await viaUrl.ensureCollection();
    expect(await (await connect(dir)).tableNames()).toEqual(['ingestion_files']);
    const qdrant = await openIndex(settings('http://127.0.0.1:1'), { log });
    expect(qdrant.engine).toBe('qdrant');
    await qdrant.close();
  });

  it('sees writes of another process within seconds', async () => {
    const dir = await tempDir();
    const i = await index(dir);
    await i.upsert([chunk('parent', 0, 'written by the parent')]);
    const child = fileURLToPath(new URL('./lance-writer-child.ts', import.meta.url));
    const out = await new Promise<string>((resolve, reject) => {
      const p = spawn(process.execPath, ['--import', 'tsx', child, dir], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let stdout = '';
      p.stdout.on('data', (b: Buffer) => {
        stdout += b.toString();
      });
      p.on('error', reject);
      p.on('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`child exited ${code}`))));
    });
    // The child counted the parent's point before adding its own.
    expect(out.trim()).toBe('1');
    // Visible once this reader re-checks the table (readConsistencySeconds).
    await eventually(async () => (await i.searchLexical({ text: 'child' }, {}, 5)).length > 0, 100);
    expect(await i.searchLexical({ text: 'child' }, {}, 5)).toHaveLength(1);
    expect(await i.count({})).toBe(2);
  });
});
