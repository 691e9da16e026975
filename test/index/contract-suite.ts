import { afterEach, describe, expect, it } from 'vitest';
import { type ChunkMeta, type IndexPoint, pointId, type SparseVector } from '../../src/index/contract.js';
import { RESERVED_TENANT_VALUES, RESERVED_TENANTS } from '../../src/index/reserved.js';
import type { HybridQuery, VectorIndex } from '../../src/index/store.js';
import { ledgerLike, runVersionProtocolSuite } from '../versions/protocol-suite.js';

/**
 * The one `VectorIndex` contract suite (docs/architecture.md, "The shared index contract"); every adapter runs it.
 * `makeIndex` returns a fresh, empty, not-yet-ensured index each time.
 */
export type MakeIndex = (opts: { denseDim?: number; sparse: boolean }) => Promise<VectorIndex>;

export interface ContractOptions {
  /** Sparse document/query encoder for engines whose lexical side is `text-sparse` (Qdrant). */
  sparse?: { encodeDocument(text: string): SparseVector; encodeQuery(text: string): SparseVector };
}

/** A term-frequency sparse vector over hashed lowercase words: enough for lexical ordering tests. */
function termId(term: string): number {
  let h = 2166136261;
  for (const ch of term) h = Math.imul(h ^ (ch.codePointAt(0) ?? 0), 16777619);
  return h >>> 1;
}
function termVector(text: string, weightOf: (tf: number) => number): SparseVector {
  const tf = new Map<number, number>();
  for (const w of text.toLowerCase().match(/\p{L}+/gu) ?? []) tf.set(termId(w), (tf.get(termId(w)) ?? 0) + 1);
  const ids = [...tf.keys()].sort((a, b) => a - b);
  return { indices: ids, values: ids.map((i) => weightOf(tf.get(i) ?? 0)) };
}
const termSparse = {
  encodeDocument: (text: string) => termVector(text, (tf) => tf),
  encodeQuery: (text: string) => termVector(text, () => 1),
};

const DIM = 4;

/** A small labelled set; the dense axes are topics: [cats, finance, weather, space]. */
const LABELLED: readonly { key: string; text: string; dense: number[]; languages: string[] }[] = [
  {
    key: 'cats',
    text: 'Cats purr when they are content and sleep in the sun',
    dense: [1, 0, 0, 0],
    languages: ['en'],
  },
  {
    key: 'markets',
    text: 'Stock markets fell as interest rates rose sharply',
    dense: [0, 1, 0, 0],
    languages: ['en'],
  },
  {
    key: 'rain',
    text: 'Heavy rain and strong wind expected tomorrow',
    dense: [0, 0, 1, 0],
    languages: ['en'],
  },
  {
    key: 'rocket',
    text: 'The rocket carried a satellite into orbit around Mars',
    dense: [0, 0, 0.2, 1],
    languages: ['en', 'da'],
  },
  {
    key: 'kittens',
    text: 'Kittens chase the red laser dot across the floor',
    dense: [0.9, 0, 0, 0.3],
    languages: ['en'],
  },
  {
    key: 'banks',
    text: 'Central banks set interest rates to control inflation',
    dense: [0.2, 0.9, 0, 0],
    languages: ['en'],
  },
  { key: 'vejret', text: 'Regn og blæst i hele landet i morgen', dense: [0, 0, 0.9, 0.1], languages: ['da'] },
];

/** Fresh, ensured indexes for a suite's tests, closed after each (`closeAll` in `afterEach`). */
export function indexOpener(makeIndex: MakeIndex) {
  const open: VectorIndex[] = [];
  return {
    async fresh(opts: { denseDim?: number; sparse: boolean }): Promise<VectorIndex> {
      const index = await makeIndex(opts);
      open.push(index);
      await index.ensureCollection();
      return index;
    },
    async closeAll(): Promise<void> {
      await Promise.all(open.splice(0).map((i) => i.close()));
    },
  };
}

export function runVectorIndexContract(
  name: string,
  makeIndex: MakeIndex,
  options: ContractOptions = {},
): void {
  const sparse = options.sparse ?? termSparse;
  const { fresh, closeAll } = indexOpener(makeIndex);

  function point(
    collection: string,
    fileId: string,
    version: string | undefined,
    splitId: number,
    text: string,
    extra: { dense?: number[]; languages?: string[] } = {},
  ): IndexPoint {
    const meta: Record<string, unknown> = {
      collection_name: collection,
      collection_type: 'knowledge',
      file_id: fileId,
      split_id: splitId,
      name: `${fileId}.md`,
      headers: ['Top', 'Sub'],
      ...(version === undefined ? {} : { ingest_version: version }),
      ...(extra.languages ? { languages: extra.languages } : {}),
    };
    return {
      id: pointId(fileId, version ?? '', splitId),
      content: text,
      // Legacy points (written before versioning) lack ingest_version, which ChunkMeta's type cannot say.
      meta: meta as ChunkMeta,
      ...(extra.dense ? { dense: extra.dense } : {}),
      sparse: sparse.encodeDocument(text),
    };
  }

  /** The labelled set in `collection`, one file per document. */
  function labelled(collection: string, dense: boolean): IndexPoint[] {
    return LABELLED.map((d) =>
      point(collection, `${collection}-${d.key}`, 'v1', 0, d.text, {
        languages: d.languages,
        ...(dense ? { dense: d.dense } : {}),
      }),
    );
  }

  function query(text: string, dense?: number[]): HybridQuery {
    return { text, sparse: sparse.encodeQuery(text), ...(dense ? { dense } : {}) };
  }

  const keyOf = (fileId: string) => fileId.slice(fileId.indexOf('-') + 1);

  describe(`VectorIndex contract: ${name}`, () => {
    afterEach(closeAll);

    it('describes the collection it ensured', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const info = await index.describe();
      expect(info.exists).toBe(true);
      expect(info.denseSize).toBe(DIM);
      expect(info.vectorNames).toContain('text-dense');
      expect(index.hasSparse()).toBe(true);
      await index.ping();
    });

    it('never returns another collection’s points, even with identical text', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const tricky = "gamma' OR '1'='1";
      await index.upsert([...labelled('alpha', true), ...labelled('beta', true), ...labelled(tricky, true)]);
      const only = (c: string[]) => ({ collectionNames: c });
      const check = (hits: { meta: ChunkMeta }[], allowed: string[]) => {
        expect(hits.length).toBeGreaterThan(0);
        for (const h of hits) expect(allowed).toContain(h.meta.collection_name);
      };
      check(await index.searchDense([1, 0, 0, 0], only(['alpha']), 50), ['alpha']);
      check(await index.searchLexical(query('interest rates'), only(['beta']), 50), ['beta']);
      check(await index.searchHybrid(query('interest rates', [0, 1, 0, 0]), only([tricky]), 50), [tricky]);
      check((await index.scroll(only(['alpha', tricky]), { limit: 100 })).points, ['alpha', tricky]);
      expect(await index.count(only([tricky]))).toBe(LABELLED.length);
      expect(await index.count(only(['alpha', 'beta']))).toBe(2 * LABELLED.length);
      expect(await index.count(only(["gamma'"]))).toBe(0);
      expect(await index.count(only([]))).toBe(0);
      expect(await index.searchDense([1, 0, 0, 0], only([]), 10)).toEqual([]);
      expect(await index.searchHybrid(query('cats', [1, 0, 0, 0]), only(['nobody']), 10)).toEqual([]);
    });

    it('filters on languages (any of) and file', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      await index.upsert(labelled('alpha', true));
      const da = await index.scroll({ collectionNames: ['alpha'], languages: ['da'] }, { limit: 50 });
      expect(da.points.map((p) => keyOf(p.meta.file_id)).sort()).toEqual(['rocket', 'vejret']);
      expect(await index.count({ languages: ['fr', 'da'] })).toBe(2);
      expect(await index.count({ fileId: 'alpha-rain' })).toBe(1);
      expect(await index.count({ fileId: 'alpha-rain', ingestVersion: 'v2' })).toBe(0);
    });

    it('filters on file ids, collection types, source prefix and creation date, pushed into every read', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      // Values an attacker would try on a filter language: quotes, SQL, backslashes, JSON, unicode.
      const evil = [
        "x' OR 1=1 --",
        "a\\' OR ''='",
        'b"},{"source":"s3://kb/',
        'c\\"source\\":\\"s3://kb/',
        '%_*[?',
        'æøå/ünï/文档/😀',
      ];
      const docs = [
        {
          id: 'kb-a',
          source: 's3://kb/reports/a.pdf',
          type: 'knowledge',
          created: '2021-03-01T10:00:00.000Z',
        },
        {
          id: 'kb-b',
          source: 's3://kb/reports/b.pdf',
          type: 'knowledge',
          created: '2023-06-15T00:00:00.000Z',
        },
        { id: 'kb-c', source: 's3://kb/notes/c.md', type: 'file', created: '2024-01-01T00:00:00.000Z' },
        { id: 'kb-d', source: 's3://kb/reports/d.pdf', type: 'file' },
        ...evil.map((source, i) => ({ id: `kb-evil-${i}`, source, type: source, created: undefined })),
      ];
      const points = docs.flatMap((d, i) =>
        [0, 1].map((split) => {
          const p = point('alpha', d.id, 'v1', split, `chunk ${split} of document number ${i} cats`, {
            dense: [1, 0, 0, 0],
          });
          p.meta.source = d.source;
          p.meta.collection_type = d.type;
          if (d.created) p.meta.created_at = d.created;
          return p;
        }),
      );
      // Another tenant with the same sources: never returned.
      const other = points.map((p) => ({
        ...p,
        id: pointId(`o-${p.meta.file_id}`, 'v1', p.meta.split_id),
        meta: { ...p.meta, collection_name: 'beta', file_id: `o-${p.meta.file_id}` },
      }));
      await index.upsert([...points, ...other]);
      const files = async (extra: Partial<Parameters<VectorIndex['count']>[0]>) => {
        const filter = { collectionNames: ['alpha'], ...extra };
        const scrolled = (await index.scroll(filter, { limit: 100 })).points.map((p) => p.meta.file_id);
        const dense = (await index.searchDense([1, 0, 0, 0], filter, 100)).map((h) => h.meta.file_id);
        const lexical = (await index.searchLexical(query('cats document'), filter, 100)).map(
          (h) => h.meta.file_id,
        );
        const hybrid = (await index.searchHybrid(query('cats', [1, 0, 0, 0]), filter, 100)).map(
          (h) => h.meta.file_id,
        );
        const count = await index.count(filter);
        const set = [...new Set(scrolled)].sort();
        // Every read applies the same filter, inside the engine: a small limit still fills up.
        expect([...new Set(dense)].sort()).toEqual(set);
        expect([...new Set(lexical)].sort()).toEqual(set);
        expect([...new Set(hybrid)].sort()).toEqual(set);
        expect(count).toBe(scrolled.length);
        if (set.length > 0) {
          const one = await index.searchDense([1, 0, 0, 0], filter, 1);
          expect(one).toHaveLength(1);
          expect(set).toContain(one[0]!.meta.file_id);
        }
        return set;
      };
      expect(await files({ fileIds: ['kb-a', 'kb-c', 'o-kb-a'] })).toEqual(['kb-a', 'kb-c']);
      expect(await files({ fileIds: [] })).toEqual([]);
      expect(await files({ collectionTypes: ['file'] })).toEqual(['kb-c', 'kb-d']);
      expect(await files({ sourcePrefix: 's3://kb/reports/' })).toEqual(['kb-a', 'kb-b', 'kb-d']);
      expect(await files({ sourcePrefix: 's3://kb/reports/', fileIds: ['kb-b', 'kb-c'] })).toEqual(['kb-b']);
      expect(await files({ sourcePrefix: 's3://kb/re%' })).toEqual([]);
      expect(await files({ sourcePrefix: 'reports' })).toEqual([]);
      expect(await files({ createdAfter: '2022-01-01T00:00:00.000Z' })).toEqual(['kb-b', 'kb-c']);
      expect(
        await files({ createdAfter: '2021-03-01T10:00:00.000Z', createdBefore: '2024-01-01T00:00:00.000Z' }),
      ).toEqual(['kb-b']);
      expect(await files({ createdBefore: '2030-01-01T00:00:00.000Z', collectionTypes: ['file'] })).toEqual([
        'kb-c',
      ]);
      // Each injection string matches exactly its own document, as a source prefix and as a type.
      for (const [i, value] of evil.entries()) {
        expect(await files({ sourcePrefix: value })).toEqual([`kb-evil-${i}`]);
        expect(await files({ collectionTypes: [value] })).toEqual([`kb-evil-${i}`]);
        expect(await files({ fileIds: [value] })).toEqual([]);
      }
      expect(await files({ sourcePrefix: "' OR 1=1 --" })).toEqual([]);
      expect(await files({ collectionTypes: ["knowledge' OR '1'='1"] })).toEqual([]);
    });

    it('deletes the other versions of a file, including points with no version', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const f = 'file-versioned';
      await index.upsert([
        ...[0, 1, 2].map((s) => point('alpha', f, 'v1', s, `old chunk ${s}`, { dense: [1, 0, 0, 0] })),
        point('alpha', f, undefined, 0, 'legacy chunk', { dense: [1, 0, 0, 0] }),
        ...[0, 1].map((s) => point('alpha', f, 'v2', s, `new chunk ${s}`, { dense: [1, 0, 0, 0] })),
        point('alpha', 'file-other', 'v1', 0, 'another file', { dense: [0, 1, 0, 0] }),
      ]);
      expect(await index.count({ fileId: f })).toBe(6);
      expect(await index.deleteWhere({ fileId: f, notIngestVersion: 'v2' })).toBe(4);
      const left = await index.scroll({ fileId: f }, { limit: 10 });
      expect(left.points.map((p) => [p.meta.ingest_version, p.meta.split_id, p.content]).sort()).toEqual([
        ['v2', 0, 'new chunk 0'],
        ['v2', 1, 'new chunk 1'],
      ]);
      expect(await index.count({})).toBe(3);
      expect(await index.deleteWhere({ fileId: f, notIngestVersion: 'v2' })).toBe(0);
      expect(await index.deleteWhere({ fileId: f })).toBe(2);
      expect(await index.count({ fileId: 'file-other' })).toBe(1);
    });

    it('moves a version to another tenant whole, vectors and meta kept, and back', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const f = 'file-moved';
      // More rows than any default page size of the engines: a move takes the whole version.
      const v1 = Array.from({ length: 40 }, (_, s) =>
        point('alpha', f, 'v1', s, `walrus chunk ${s}`, { dense: [1, 0, 0, 0], languages: ['en'] }),
      );
      await index.upsert([...v1, point('alpha', f, 'v2', 0, 'pelican chunk', { dense: [0, 1, 0, 0] })]);
      const kept = RESERVED_TENANTS.kept;
      const mine = { fileId: f, collectionNames: ['alpha'], ingestVersion: 'v1' };
      expect(await index.moveTo(mine, kept)).toBe(40);
      // Out of every tenant: no search filtered on collection names reaches it.
      expect(await index.searchDense([1, 0, 0, 0], { collectionNames: ['alpha'] }, 10)).toHaveLength(1);
      expect(await index.searchLexical(query('walrus'), { collectionNames: ['alpha', kept] }, 10)).toEqual(
        [],
      );
      expect(await index.count({ fileId: f, reserved: 'kept' })).toBe(40);
      expect(await index.count({ fileId: f, chunksOnly: true })).toBe(1);
      expect(await index.moveTo({ fileId: f, reserved: 'kept', ingestVersion: 'v1' }, 'alpha')).toBe(40);
      const back = await index.searchDense([1, 0, 0, 0], mine, 50);
      expect(back.map((h) => h.id).sort()).toEqual(v1.map((p) => p.id).sort());
      const [first] = (await index.scroll({ fileId: f, ingestVersion: 'v1', splitId: 0 }, { limit: 5 }))
        .points;
      expect(first).toEqual({ id: v1[0]!.id, content: v1[0]!.content, meta: v1[0]!.meta });
      const lexical = await index.searchLexical(query('walrus'), { collectionNames: ['alpha'] }, 50);
      expect(lexical).toHaveLength(40);
      expect(await index.moveTo({ fileId: 'nothing-here' }, kept)).toBe(0);
      await expect(index.moveTo({}, kept)).rejects.toThrow(/needs a filter/);
    });

    it('lists the public tenants with their chunk counts, never the reserved ones', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      expect(await index.tenants(10)).toEqual([]);
      await index.upsert([
        ...labelled('beta', true),
        point('alpha', 'a', 'v1', 0, 'one', { dense: [1, 0, 0, 0] }),
        point('alpha', 'a', 'v1', 1, 'two', { dense: [1, 0, 0, 0] }),
        ...RESERVED_TENANT_VALUES.map((t, i) =>
          point(t, 'r', 'v1', i, 'bookkeeping', { dense: [1, 0, 0, 0] }),
        ),
      ]);
      expect(await index.tenants(10)).toEqual([
        { name: 'alpha', chunks: 2 },
        { name: 'beta', chunks: LABELLED.length },
      ]);
      expect(await index.tenants(1)).toHaveLength(1);
      expect(await index.count({ collectionNames: ['alpha'], splitId: 0 })).toBe(1);
    });

    it('scrolls every matching point exactly once, page by page', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const points = [0, 1, 2].flatMap((f) =>
        Array.from({ length: 9 }, (_, s) => point('alpha', `scroll-${f}`, 'v1', s, `chunk ${f} ${s}`)),
      );
      await index.upsert([...points, point('beta', 'scroll-0', 'v1', 99, 'not alpha')]);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await index.scroll(
          { collectionNames: ['alpha'] },
          { limit: 7, ...(cursor ? { cursor } : {}) },
        );
        expect(page.points.length).toBeLessThanOrEqual(7);
        seen.push(...page.points.map((p) => p.id));
        cursor = page.next;
        pages += 1;
      } while (cursor && pages < 20);
      expect(pages).toBe(4);
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.sort()).toEqual(points.map((p) => p.id).sort());
    });

    it('keeps content and meta as written', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const p = point('alpha', 'meta-file', 'v7', 3, 'Ærø har æbler og øl — “quotes” \\ back\\slash', {
        dense: [0, 0, 1, 0],
        languages: ['da'],
      });
      const withExtras = { ...p, meta: { ...p.meta, page: 4, authors: ['A', 'B'], vision_profile: 'x' } };
      await index.upsert([withExtras]);
      const [stored] = (await index.scroll({ fileId: 'meta-file' }, { limit: 5 })).points;
      expect(stored).toEqual({ id: p.id, content: withExtras.content, meta: withExtras.meta });
    });

    it('reads meta without the text when asked (`metaOnly`), pages and all', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const points = [0, 1, 2].map((s) => point('alpha', 'meta-only', 'v1', s, `long text ${s}`));
      await index.upsert(points);
      const first = await index.scroll({ fileId: 'meta-only' }, { limit: 2, metaOnly: true });
      const rest = await index.scroll(
        { fileId: 'meta-only' },
        { limit: 2, metaOnly: true, cursor: first.next! },
      );
      const read = [...first.points, ...rest.points].sort((a, b) => a.meta.split_id - b.meta.split_id);
      expect(read).toEqual(points.map((q) => ({ id: q.id, content: '', meta: q.meta })));
      expect(rest.next).toBeUndefined();
    });

    it('upserts idempotently by deterministic id and sees fresh rows at once', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      expect(pointId('f', 'v1', 2)).toBe(pointId('f', 'v1', 2));
      expect(pointId('f', 'v1', 2)).not.toBe(pointId('f', 'v2', 2));
      const batch = labelled('alpha', true);
      await index.upsert(batch);
      await index.upsert(batch);
      expect(await index.count({ collectionNames: ['alpha'] })).toBe(LABELLED.length);
      const rain = batch.find((p) => p.meta.file_id === 'alpha-rain')!;
      await index.upsert([
        {
          ...rain,
          content: 'Sunny skies and zebras',
          sparse: sparse.encodeDocument('Sunny skies and zebras'),
        },
      ]);
      expect(await index.count({ collectionNames: ['alpha'] })).toBe(LABELLED.length);
      const zebra = await index.searchLexical(query('zebras'), { collectionNames: ['alpha'] }, 5);
      expect(zebra.map((h) => h.id)).toEqual([rain.id]);
      const wind = await index.searchLexical(query('wind'), { collectionNames: ['alpha'] }, 5);
      expect(wind.map((h) => h.id)).not.toContain(rain.id);
    });

    it('orders dense hits by cosine, with scores (cos + 1) / 2 in [0, 1]', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      await index.upsert(labelled('alpha', true));
      const hits = await index.searchDense([1, 0, 0, 0], { collectionNames: ['alpha'] }, 3);
      expect(hits.map((h) => keyOf(h.meta.file_id))).toEqual(['cats', 'kittens', 'banks']);
      expect(hits[0]!.score).toBeCloseTo(1, 4);
      const kittensCos = 0.9 / Math.hypot(0.9, 0.3);
      expect(hits[1]!.score).toBeCloseTo((kittensCos + 1) / 2, 4);
      const opposite = await index.searchDense([-1, 0, 0, 0], { collectionNames: ['alpha'] }, 10);
      expect(opposite.length).toBe(LABELLED.length);
      for (const h of opposite) expect(h.score).toBeGreaterThanOrEqual(0);
      for (const h of opposite) expect(h.score).toBeLessThanOrEqual(1);
      expect(opposite.at(-1)!.score).toBeCloseTo(0, 4);
      expect(opposite.map((h) => h.score)).toEqual([...opposite.map((h) => h.score)].sort((a, b) => b - a));
    });

    it('ranks lexical hits by the query terms', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      await index.upsert([...labelled('alpha', true), ...labelled('beta', true)]);
      const hits = await index.searchLexical(query('interest rates'), { collectionNames: ['alpha'] }, 10);
      expect(hits.map((h) => keyOf(h.meta.file_id)).sort()).toEqual(['banks', 'markets']);
      for (const h of hits) expect(h.score).toBeGreaterThan(0);
      const laser = await index.searchLexical(query('laser'), { collectionNames: ['alpha'] }, 10);
      expect(laser.map((h) => keyOf(h.meta.file_id))).toEqual(['kittens']);
      expect(await index.searchLexical(query('xylophone'), { collectionNames: ['alpha'] }, 10)).toEqual([]);
    });

    it('fuses dense and lexical ranks in hybrid search (raw RRF scores)', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      await index.upsert([...labelled('alpha', true), ...labelled('beta', true)]);
      // Dense alone puts "cats" first; the lexical side only knows "kittens"; fused, kittens wins.
      const dense = await index.searchDense([1, 0, 0, 0], { collectionNames: ['alpha'] }, 2);
      expect(dense.map((h) => keyOf(h.meta.file_id))).toEqual(['cats', 'kittens']);
      const hits = await index.searchHybrid(
        query('kittens laser', [1, 0, 0, 0]),
        { collectionNames: ['alpha'] },
        3,
      );
      expect(hits.map((h) => keyOf(h.meta.file_id)).slice(0, 2)).toEqual(['kittens', 'cats']);
      for (const h of hits) expect(h.score).toBeGreaterThan(0);
      for (const h of hits) expect(h.score).toBeLessThanOrEqual(1);
      expect(hits.map((h) => h.score)).toEqual([...hits.map((h) => h.score)].sort((a, b) => b - a));
      expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
    });

    it('writes a point with every part of an upsert (`withEach`), and alone when there is nothing else', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      let calls = 0;
      const marker = () => {
        calls += 1;
        return ledgerLike('writing', 'file-each', 'v1', 'alpha');
      };
      await index.upsert([], { withEach: marker });
      expect(await index.count({ reserved: 'writing', fileId: 'file-each' })).toBe(1);
      const points = [0, 1, 2].map((s) =>
        point('alpha', 'file-each', 'v1', s, `each ${s}`, { dense: [1, 0, 0, 0] }),
      );
      await index.upsert(points, { withEach: marker });
      expect(calls).toBeGreaterThanOrEqual(2);
      expect(await index.count({ fileId: 'file-each', collectionNames: ['alpha'] })).toBe(3);
      expect(await index.count({ reserved: 'writing', fileId: 'file-each' })).toBe(1);
      const stopped = new AbortController();
      stopped.abort();
      await expect(index.upsert(points, { withEach: marker, signal: stopped.signal })).rejects.toThrow();
    });

    it('appends points whose ids are new (`append`), seen at once by this handle', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const points = [0, 1].map((s) =>
        point('alpha', 'file-new', 'v1', s, `new ${s}`, { dense: [1, 0, 0, 0] }),
      );
      await index.upsert([...points, ledgerLike('committed', 'file-new', 'v1', 'alpha')], { append: true });
      expect(await index.count({ fileId: 'file-new', collectionNames: ['alpha'] })).toBe(2);
      expect(await index.count({ reserved: 'committed', fileId: 'file-new' })).toBe(1);
      const hits = await index.searchDense([1, 0, 0, 0], { collectionNames: ['alpha'] }, 10);
      expect(hits.map((h) => h.id).sort()).toEqual(points.map((p) => p.id).sort());
    });

    it('moves the staging tenant out whole, counted or not, and answers presence where it can', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const staged = [0, 1, 2].map((s) =>
        point(RESERVED_TENANTS.staging, 'file-staged', 'v1', s, `staged ${s}`, { dense: [1, 0, 0, 0] }),
      );
      await index.upsert(staged);
      expect(await index.count({ fileId: 'file-staged', collectionNames: ['alpha'] })).toBe(0);
      await index.upsert([
        point(RESERVED_TENANTS.staging, 'file-staged-2', 'v1', 0, 'two', { dense: [1, 0, 0, 0] }),
      ]);
      const filter = { fileId: 'file-staged', ingestVersion: 'v1', reserved: 'staging' as const };
      const other = { ...filter, fileId: 'file-staged-2' };
      expect(await index.count([filter, other, { collectionNames: [] }])).toBe(4);
      await index.moveTo([filter, other], 'alpha', { counted: false });
      expect(await index.count([{ fileId: 'file-staged-2', collectionNames: ['alpha'] }])).toBe(1);
      await index.deleteWhere({ fileId: 'file-staged-2' });
      expect(await index.count({ fileId: 'file-staged', collectionNames: ['alpha'] })).toBe(3);
      expect(await index.count({ reserved: 'staging' })).toBe(0);
      const page = await index.scroll({ fileId: 'file-staged', collectionNames: ['alpha'] }, { limit: 10 });
      expect(page.points.map((p) => p.meta.collection_name)).toEqual(['alpha', 'alpha', 'alpha']);
      if (index.presence) {
        const committed = ledgerLike('committed', 'file-staged', 'v1', 'alpha');
        const ask = { fileId: 'file-staged', collectionName: 'alpha', id: committed.id };
        expect(await index.presence(ask)).toEqual({ chunks: true, id: false });
        await index.upsert([committed]);
        expect(await index.presence(ask)).toEqual({ chunks: true, id: true });
        expect(await index.presence({ ...ask, collectionName: 'beta' })).toEqual({ chunks: false, id: true });
      }
    });

    it('keeps the reserved tenants out of reach of collection names', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const staged = point(RESERVED_TENANTS.staging, 'file-r', 'v9', 0, 'cats staged secret', {
        dense: [1, 0, 0, 0],
      });
      await index.upsert([
        staged,
        ledgerLike('writing', 'file-r', 'v9', 'alpha'),
        ledgerLike('committed', 'file-r', 'v8', 'alpha'),
        point('alpha', 'file-r', 'v8', 0, 'cats public', { dense: [1, 0, 0, 0] }),
      ]);
      const names = [...RESERVED_TENANT_VALUES, ` ${RESERVED_TENANTS.staging}`, 'kilde:staging'];
      for (const collectionNames of [names, [...names, 'alpha']]) {
        const only = { collectionNames };
        const seen = [
          ...(await index.searchDense([1, 0, 0, 0], only, 10)),
          ...(await index.searchLexical(query('cats'), only, 10)),
          ...(await index.searchHybrid(query('cats', [1, 0, 0, 0]), only, 10)),
          ...(await index.scroll(only, { limit: 10 })).points,
        ];
        for (const hit of seen) expect(hit.meta.collection_name).toBe('alpha');
        expect(await index.count(only)).toBe(collectionNames.includes('alpha') ? 1 : 0);
        expect(await index.deleteWhere({ ...only, fileId: 'nothing-here' })).toBe(0);
      }
      expect(await index.count({ reserved: 'staging' })).toBe(1);
      expect(await index.count({ fileId: 'file-r', chunksOnly: true })).toBe(1);
      const page = await index.scroll({ fileId: 'file-r', chunksOnly: true }, { limit: 10 });
      expect(page.points.map((p) => p.content)).toEqual(['cats public']);
    });

    it('matches nothing, and fails nothing, for control characters in filter values', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      await index.upsert(labelled('alpha', true));
      for (const odd of ['a\u0000b', '\u0000', "x'\u0001'", 'alpha\u0000']) {
        const only = { collectionNames: [odd], fileId: odd };
        expect(await index.count(only)).toBe(0);
        expect(await index.searchDense([1, 0, 0, 0], only, 5)).toEqual([]);
        expect(await index.deleteWhere({ fileId: odd })).toBe(0);
      }
      expect(await index.count({ collectionNames: ['alpha'] })).toBe(LABELLED.length);
      // Repeated names and languages are one condition each (Qdrant refuses repeats in match.any).
      expect(await index.count({ collectionNames: ['alpha', 'alpha'], languages: ['da', 'da'] })).toBe(2);
      expect(await index.searchDense([1, 0, 0, 0], { collectionNames: ['alpha', 'alpha'] }, 50)).toHaveLength(
        LABELLED.length,
      );
    });

    it('works lexical-only, with no dense vector at all', async () => {
      const index = await fresh({ sparse: true });
      const info = await index.describe();
      expect(info.exists).toBe(true);
      expect(info.denseSize).toBeUndefined();
      expect(info.vectorNames).not.toContain('text-dense');
      expect(index.hasSparse()).toBe(true);
      await index.upsert([...labelled('alpha', false), ...labelled('beta', false)]);
      expect(await index.count({ collectionNames: ['alpha'] })).toBe(LABELLED.length);
      const lexical = await index.searchLexical(query('laser'), { collectionNames: ['alpha'] }, 5);
      expect(lexical.map((h) => keyOf(h.meta.file_id))).toEqual(['kittens']);
      const hybrid = await index.searchHybrid(query('interest rates'), { collectionNames: ['beta'] }, 5);
      expect(hybrid.map((h) => keyOf(h.meta.file_id)).sort()).toEqual(['banks', 'markets']);
      for (const h of hybrid) expect(h.meta.collection_name).toBe('beta');
      expect(await index.deleteWhere({ collectionNames: ['beta'] })).toBe(LABELLED.length);
    });
  });

  runVersionProtocolSuite(name, makeIndex);
}
