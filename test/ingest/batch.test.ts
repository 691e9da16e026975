import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StoredPoint } from '../../src/index/contract.js';
import type { IngestTarget } from '../../src/ingest/request.js';
import type { BatchRequest } from '../../src/ingest/service.js';
import { pointsOf, versionsOf } from './helpers/harness.js';
import { chunkShape, handbook, serviceFixture } from './helpers/service-fixture.js';

/**
 * `IngestService.ingestMany`: many files through one pipeline pass and one group commit, each
 * keeping the version semantics of its own `ingest` (rows, versions, ledger; a failing file keeps
 * its previous version while the others land).
 */
const C = 'batch-docs';
const text = handbook;

const f = serviceFixture();

function target(fileId: string, collectionName = C): IngestTarget {
  return {
    fileId,
    filename: `${fileId}.txt`,
    collectionName,
    collectionType: 'file',
    userId: 'u1',
    overwrite: true,
    source: `${fileId}.txt`,
  };
}

async function request(fileId: string, content: string | Buffer, ext = 'txt', collection = C) {
  const path = join(f.dir, `${fileId}-${Math.random().toString(16).slice(2)}.${ext}`);
  await writeFile(path, content);
  const filename = `${fileId}.${ext}`;
  return {
    target: { ...target(fileId, collection), filename, source: filename },
    load: async () => ({ path, filename, bytes: Buffer.byteLength(content) }),
  } satisfies BatchRequest;
}

/** What a reader sees of a file, and the name it was read under. */
const shape = (points: readonly StoredPoint[]) =>
  chunkShape(points).map((c, i) => ({ ...c, name: points[i]!.meta.name }));

async function visibleVersions(fileId: string): Promise<string[]> {
  return versionsOf(await pointsOf(f.h.index, fileId));
}

describe('ingestMany', () => {
  it('writes every file as its own version, with exactly the chunks a single ingest gives', async () => {
    const texts = { a: text('alpha', 20), b: text('beta', 3), c: `# Title\n\n${text('gamma', 9)}` };
    const many = await f.service.ingestMany(
      await Promise.all(Object.entries(texts).map(([id, t]) => request(id, t, id === 'c' ? 'md' : 'txt'))),
    );
    expect(many.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    // The same files one by one into another collection: the chunks must be the same.
    for (const [id, t] of Object.entries(texts)) {
      const r = await request(`single-${id}`, t, id === 'c' ? 'md' : 'txt', 'single-docs');
      await f.service.ingest(r.target, r.load);
    }
    for (const [k, id] of Object.keys(texts).entries()) {
      const batch = await pointsOf(f.h.index, id);
      const single = await pointsOf(f.h.index, `single-${id}`);
      expect(batch.length).toBeGreaterThan(0);
      expect(shape(batch)).toEqual(shape(single).map((s) => ({ ...s, name: batch[0]!.meta.name })));
      const outcome = many[k]!;
      if (outcome.status !== 'fulfilled') throw new Error('expected a result');
      expect(outcome.value.chunksCount).toBe(batch.length);
      // One version per file, the one the result names, and its committed record.
      expect(versionsOf(batch)).toEqual([outcome.value.ingestVersion]);
      const committed = await f.h.index.scroll({ reserved: 'committed', fileId: id }, { limit: 10 });
      expect(committed.points.map((p) => p.meta.ingest_version)).toEqual([outcome.value.ingestVersion]);
    }
    // No bookkeeping left behind: no `writing` entry, nothing staged.
    expect(await f.h.index.count({ reserved: 'writing' })).toBe(0);
    expect(await f.h.index.count({ reserved: 'staging' })).toBe(0);
    // The versions landed together: the log says one pass of three files.
    const lines = f.h.logs.lines.filter((l) => l.msg === 'ingested');
    expect(lines.map((l) => l.batch)).toEqual([3, 3, 3, undefined, undefined, undefined]);
  });

  it('replaces the old versions of the files that succeed; a failing file keeps its previous version', async () => {
    const first = await f.service.ingestMany([
      await request('good', text('first good', 6)),
      await request('broken', text('first broken', 6)),
      await request('emptied', text('first emptied', 6)),
    ]);
    expect(first.every((r) => r.status === 'fulfilled')).toBe(true);
    const before = {
      broken: await visibleVersions('broken'),
      emptied: await visibleVersions('emptied'),
      good: await visibleVersions('good'),
    };

    const second = await f.service.ingestMany([
      await request('good', text('second good', 8)),
      // Not a PDF at all: extraction fails for this file alone.
      await request('broken', Buffer.from('%PDF-1.7 this is not a pdf'), 'pdf'),
      await request('emptied', '   \n  '),
    ]);
    const [good, broken, emptied] = second;
    expect(good?.status).toBe('fulfilled');
    expect(broken?.status === 'rejected' && (broken.reason as { code?: string }).code).toBe(
      'EXTRACTION_FAILED',
    );
    expect(emptied?.status === 'rejected' && (emptied.reason as { statusCode?: number }).statusCode).toBe(
      422,
    );

    // The good file: its new version alone is visible, with its new text.
    const goodPoints = await pointsOf(f.h.index, 'good');
    expect(versionsOf(goodPoints)).toHaveLength(1);
    expect(versionsOf(goodPoints)).not.toEqual(before.good);
    expect(goodPoints.map((p) => p.content).join(' ')).toContain('second good');
    // The failing files: their previous versions, untouched.
    expect(await visibleVersions('broken')).toEqual(before.broken);
    expect(await visibleVersions('emptied')).toEqual(before.emptied);
    expect((await pointsOf(f.h.index, 'broken')).map((p) => p.content).join(' ')).toContain('first broken');
    expect(await f.h.index.count({ reserved: 'writing' })).toBe(0);
  });

  it('ingests a file_id named twice in one call twice, the later one last', async () => {
    const out = await f.service.ingestMany([
      await request('twice', text('earlier', 4)),
      await request('once', text('other', 4)),
      await request('twice', text('later', 4)),
    ]);
    expect(out.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    const points = await pointsOf(f.h.index, 'twice');
    const last = out[2];
    if (last?.status !== 'fulfilled') throw new Error('expected a result');
    expect(versionsOf(points)).toEqual([last.value.ingestVersion]);
    expect(points.map((p) => p.content).join(' ')).toContain('later');
  });

  it('refuses a bad collection name for that file only', async () => {
    const out = await f.service.ingestMany([
      await request('fine', text('fine', 4)),
      await request('bad', text('bad', 4), 'txt', 'not a valid name!'),
    ]);
    expect(out[0]?.status).toBe('fulfilled');
    expect(out[1]?.status === 'rejected' && (out[1].reason as { statusCode?: number }).statusCode).toBe(400);
    expect(await f.h.index.count({ fileId: 'bad' })).toBe(0);
  });
});
