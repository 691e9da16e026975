import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChunkMeta, type IndexPoint, pointId } from '../../src/index/contract.js';
import { RESERVED_TENANTS, type ReservedTenant } from '../../src/index/reserved.js';
import { commitVersion } from '../../src/versions/publish.js';
import { stageVersion, type VersionWrite, writeVersion } from '../../src/versions/write.js';
import { indexOpener, type MakeIndex } from '../index/contract-suite.js';

/**
 * The version protocol's writes (src/versions/write.ts) over an index's `PointStore`: every adapter
 * that runs the contract suite (test/index/contract-suite.ts) runs these too, so a version is
 * written whole, staged invisibly and published at once on every engine, by whichever path the
 * store's `atomicUpsert` picks.
 */
/** A ledger-like entry in a reserved tenant, as src/versions/ledger.ts makes them. */
export function ledgerLike(
  tenant: ReservedTenant,
  fileId: string,
  version: string,
  collection: string,
): IndexPoint {
  return {
    id: pointId(fileId, `\u0001${tenant}\u0001${version}`, 0),
    content: '',
    meta: {
      collection_name: RESERVED_TENANTS[tenant],
      collection_type: 'kilde-ledger',
      file_id: fileId,
      ingest_version: version,
      split_id: 0,
      kilde_ledger: { collection_name: collection, points: 3, at: 1 },
    },
  };
}

export function runVersionProtocolSuite(name: string, makeIndex: MakeIndex): void {
  const { fresh, closeAll } = indexOpener(makeIndex);
  const DIM = 4;

  /** A version of a file in `alpha`, with both of its ledger entries. */
  const versionOf = (fileId: string, version: string, points: IndexPoint[]): VersionWrite => ({
    fileId,
    collectionName: 'alpha',
    version,
    points,
    writing: () => ledgerLike('writing', fileId, version, 'alpha'),
    committed: ledgerLike('committed', fileId, version, 'alpha'),
  });

  function point(
    collection: string,
    fileId: string,
    version: string,
    splitId: number,
    text: string,
    extra: { dense?: number[] } = {},
  ): IndexPoint {
    const meta: ChunkMeta = {
      collection_name: collection,
      collection_type: 'knowledge',
      file_id: fileId,
      split_id: splitId,
      ingest_version: version,
    };
    return { id: pointId(fileId, version, splitId), content: text, meta, ...extra };
  }

  describe(`version protocol over ${name}`, () => {
    afterEach(closeAll);

    it('writes a version whole: its points and both ledger entries, nothing staged left', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const f = 'file-whole';
      const v1 = [0, 1].map((s) => point('alpha', f, 'v1', s, `old ${s}`, { dense: [1, 0, 0, 0] }));
      await index.upsert(v1);
      const v2 = [0, 1, 2].map((s) => point('alpha', f, 'v2', s, `new ${s}`, { dense: [0, 1, 0, 0] }));
      let beats = 0;
      await writeVersion(index, {
        fileId: f,
        collectionName: 'alpha',
        version: 'v2',
        points: v2,
        writing: () => {
          beats += 1;
          return ledgerLike('writing', f, 'v2', 'alpha');
        },
        committed: ledgerLike('committed', f, 'v2', 'alpha'),
      });
      expect(beats).toBeGreaterThan(0);
      expect(await index.count({ fileId: f, collectionNames: ['alpha'], ingestVersion: 'v2' })).toBe(3);
      expect(await index.count({ fileId: f, collectionNames: ['alpha'] })).toBe(5);
      expect(await index.count({ reserved: 'staging' })).toBe(0);
      expect(await index.count({ reserved: 'writing', fileId: f, ingestVersion: 'v2' })).toBe(1);
      expect(await index.count({ reserved: 'committed', fileId: f })).toBe(1);
      const hits = await index.searchDense([0, 1, 0, 0], { collectionNames: ['alpha'] }, 10);
      expect(
        hits
          .filter((h) => h.meta.ingest_version === 'v2')
          .map((h) => h.meta.split_id)
          .sort(),
      ).toEqual([0, 1, 2]);
      // The retire step: other versions and the writing entry in one delete.
      const removed = await index.deleteWhere([
        { fileId: f, collectionNames: ['alpha'], notIngestVersion: 'v2' },
        { reserved: 'writing', fileId: f, ingestVersion: 'v2' },
      ]);
      expect(removed).toBe(3);
      expect(await index.count({ fileId: f, chunksOnly: true })).toBe(3);
      expect(await index.count({ fileId: f })).toBe(4); // + the committed entry
    });

    it('reports whether it left a `writing` entry, and leaves exactly that', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const v = [0, 1].map((s) =>
        point('alpha', 'file-first', 'v1', s, `first ${s}`, { dense: [1, 0, 0, 0] }),
      );
      const written = await writeVersion(index, versionOf('file-first', 'v1', v));
      expect(await index.count({ reserved: 'writing', fileId: 'file-first' })).toBe(written.writing ? 1 : 0);
      expect(await index.count({ fileId: 'file-first', collectionNames: ['alpha'] })).toBe(2);
      expect(await index.count({ reserved: 'committed', fileId: 'file-first' })).toBe(1);
    });

    it('writes an exclusive first version whole, and never a second `committed` entry for a file', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      // The `committed` entry's id is fixed per file and collection, as src/versions/ledger.ts makes it.
      const committed = (fileId: string, version: string): IndexPoint => ({
        ...ledgerLike('committed', fileId, version, 'alpha'),
        id: pointId(fileId, '\u0001committed\u0001alpha', 0),
      });
      const write = (fileId: string, version: string, n: number) =>
        writeVersion(index, {
          fileId,
          collectionName: 'alpha',
          version,
          points: Array.from({ length: n }, (_, s) =>
            point('alpha', fileId, version, s, `${version} ${s}`, { dense: [1, 0, 0, 0] }),
          ),
          writing: () => ledgerLike('writing', fileId, version, 'alpha'),
          committed: committed(fileId, version),
          exclusive: true,
        });
      // Two new files written together (one group commit), each whole.
      await Promise.all([write('file-new-a', 'v1', 2), write('file-new-b', 'v1', 3)]);
      expect(await index.count({ fileId: 'file-new-a', collectionNames: ['alpha'] })).toBe(2);
      expect(await index.count({ fileId: 'file-new-b', collectionNames: ['alpha'] })).toBe(3);
      // The chunks go, the ledger entry stays (reserved tenant): the file has no chunk in the
      // collection, but its `committed` id is taken, so the next version must replace that entry.
      await index.deleteWhere({ fileId: 'file-new-a', collectionNames: ['alpha'] });
      expect(await index.count({ fileId: 'file-new-a', collectionNames: ['alpha'] })).toBe(0);
      await write('file-new-a', 'v2', 2);
      const records = await index.scroll({ reserved: 'committed', fileId: 'file-new-a' }, { limit: 10 });
      expect(records.points.map((p) => p.meta.ingest_version)).toEqual(['v2']);
      expect(
        await index.count({ fileId: 'file-new-a', collectionNames: ['alpha'], ingestVersion: 'v2' }),
      ).toBe(2);
      // A file with chunks already: merged beside them (the caller retires the old), one `committed`.
      await write('file-new-b', 'v2', 1);
      expect(await index.count({ reserved: 'committed', fileId: 'file-new-b' })).toBe(1);
      expect(await index.count({ fileId: 'file-new-b', collectionNames: ['alpha'] })).toBe(4);
    });

    it('publishes a version staged in batches at once, with its last batch', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const f = 'file-staged';
      const v1 = [0, 1].map((s) => point('alpha', f, 'v1', s, `old ${s}`, { dense: [1, 0, 0, 0] }));
      await index.upsert(v1);
      const v2 = [0, 1, 2, 3, 4].map((s) => point('alpha', f, 'v2', s, `new ${s}`, { dense: [0, 1, 0, 0] }));
      for (const batch of [v2.slice(0, 2), v2.slice(2, 4)])
        await stageVersion(index, versionOf(f, 'v2', batch));
      // Staged: no reader filtering on collection names sees any of it.
      expect(await index.count({ fileId: f, collectionNames: ['alpha'], ingestVersion: 'v2' })).toBe(0);
      expect(await index.count({ reserved: 'staging', fileId: f })).toBe(4);
      expect(await index.count({ reserved: 'writing', fileId: f, ingestVersion: 'v2' })).toBe(1);
      const hidden = await index.searchDense([0, 1, 0, 0], { collectionNames: ['alpha'] }, 10);
      expect(hidden.every((h) => h.meta.ingest_version === 'v1')).toBe(true);
      const written = await writeVersion(index, {
        fileId: f,
        collectionName: 'alpha',
        version: 'v2',
        points: v2.slice(4),
        staged: 4,
        writing: () => ledgerLike('writing', f, 'v2', 'alpha'),
        committed: ledgerLike('committed', f, 'v2', 'alpha'),
      });
      expect(written.writing).toBe(true);
      expect(await index.count({ reserved: 'staging' })).toBe(0);
      expect(await index.count({ fileId: f, collectionNames: ['alpha'], ingestVersion: 'v2' })).toBe(5);
      expect(await index.count({ reserved: 'committed', fileId: f })).toBe(1);
      // Read back whole: the collection in meta too, not only in the filter column.
      const page = await index.scroll(
        { fileId: f, collectionNames: ['alpha'], ingestVersion: 'v2' },
        { limit: 10 },
      );
      expect(page.points.map((p) => [p.meta.collection_name, p.content]).sort()).toEqual(
        v2.map((p) => ['alpha', p.content]).sort(),
      );
      const hits = await index.searchDense([0, 1, 0, 0], { collectionNames: ['alpha'] }, 10);
      expect(hits.filter((h) => h.meta.ingest_version === 'v2')).toHaveLength(5);
    });

    it('writes the versions of many files at once, each whole; an aborted one fails alone', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      await index.upsert([point('alpha', 'many-0', 'v0', 0, 'older', { dense: [1, 0, 0, 0] })]);
      const stopped = new AbortController();
      stopped.abort();
      const versions = Array.from({ length: 6 }, (_, k) => {
        const points = Array.from({ length: k + 1 }, (_, s) =>
          point(k % 2 === 0 ? 'alpha' : 'beta', `many-${k}`, 'v1', s, `many ${k} ${s}`, {
            dense: [0, 1, 0, 0],
          }),
        );
        const v = { ...versionOf(`many-${k}`, 'v1', points), collectionName: k % 2 === 0 ? 'alpha' : 'beta' };
        return k === 5 ? { ...v, signal: stopped.signal } : v;
      });
      const outcomes = await Promise.allSettled(versions.map((v) => writeVersion(index, v)));
      expect(outcomes.map((o) => o.status)).toEqual([...Array(5).fill('fulfilled'), 'rejected']);
      for (const [k, v] of versions.entries()) {
        const visible = await index.count({
          fileId: v.fileId,
          ingestVersion: 'v1',
          collectionNames: [v.collectionName],
        });
        expect(visible).toBe(k === 5 ? 0 : k + 1);
      }
      expect(await index.count({ reserved: 'staging' })).toBe(0);
      expect(await index.count({ reserved: 'committed' })).toBe(5);
      // The older version beside the new one is the caller's to retire.
      expect(await index.count({ fileId: 'many-0', collectionNames: ['alpha'] })).toBe(2);
    });

    it('commits new versions of many files at once and retires every older one', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const files = Array.from({ length: 5 }, (_, k) => `pass-${k}`);
      const commitAll = (version: string) =>
        Promise.all(
          files.map((f) => {
            const points = [0, 1].map((s) =>
              point('alpha', f, version, s, `${version} ${s}`, { dense: [1, 0, 0, 0] }),
            );
            const scope = { fileId: f, collectionName: 'alpha', version };
            return commitVersion(index, scope, points, { log: pino({ level: 'silent' }), now: () => 1 });
          }),
        );
      await commitAll('v1');
      await commitAll('v2');
      for (const f of files) {
        const page = await index.scroll({ fileId: f, collectionNames: ['alpha'] }, { limit: 10 });
        expect(page.points.map((p) => p.meta.ingest_version)).toEqual(['v2', 'v2']);
      }
      expect(await index.count({ reserved: 'writing' })).toBe(0);
      expect(await index.count({ reserved: 'staging' })).toBe(0);
      expect(await index.count({ reserved: 'committed' })).toBe(5);
    });

    it('stops before anything becomes visible when the write is aborted', async () => {
      const index = await fresh({ denseDim: DIM, sparse: true });
      const controller = new AbortController();
      controller.abort();
      const v = [0, 1].map((s) => point('alpha', 'file-abort', 'v1', s, `x ${s}`, { dense: [1, 0, 0, 0] }));
      const err = await writeVersion(index, {
        ...versionOf('file-abort', 'v1', v),
        signal: controller.signal,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(await index.count({ fileId: 'file-abort', collectionNames: ['alpha'] })).toBe(0);
    });
  });
}
