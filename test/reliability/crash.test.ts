import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../bench/lib/stats.js';
import { createLanceIndex } from '../../src/index/lancedb.js';
import { openIndex } from '../../src/index/open.js';
import type { VectorIndex } from '../../src/index/store.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { multipartBody } from '../ingest/helpers/harness.js';
import { AUTH, type Kilde, startKilde } from './child.js';
import { reliabilitySettings } from './settings.js';

/**
 * Crash consistency of a real `kilde serve all` (issue #18 item 6): re-ingests of several files run
 * concurrently and the process is SIGKILLed at a random moment, then restarted on the same index.
 * After every restart each file has exactly one complete version, and it is searchable; an ingest
 * that was answered 200 before the kill survived it. At the end no staged point, no `writing`
 * entry and no upload folder is left. Identifiers with NUL and other control characters are
 * refused and leave nothing behind. LanceDB (embedded) and Qdrant (the schema-checked fake, which
 * lives in this process and so outlives every kill).
 */
const settings = reliabilitySettings('crash');
const FILES = 4;
const ROUNDS = settings.long ? 25 : 5; // CI: 5 kills x 4 files = 20 interrupted re-ingests

interface Variant {
  tag: string;
  paragraphs: number;
}

/** One chunk per paragraph (CHUNK_SPLIT_BY=passage, CHUNK_SIZE=1): a version's size is known. */
function text(v: Variant): string {
  return Array.from(
    { length: v.paragraphs },
    (_, i) => `Paragraph ${i} of ${v.tag} describes procedure ${v.tag}p${i} for the citizens.`,
  ).join('\n\n');
}

const ENGINES = settings.long ? (['lancedb', 'qdrant'] as const) : (['lancedb', 'qdrant'] as const);

describe.each(ENGINES)('%s: SIGKILL during re-ingests', { timeout: settings.timeoutMs }, (engine) => {
  const rounds = engine === 'lancedb' ? ROUNDS : Math.max(2, Math.ceil(ROUNDS / 2));
  let qdrant: QdrantFake | undefined;
  let dataDir: string;
  let tmp: string;
  let kilde: Kilde | undefined;
  const collection = `crash_${engine}`;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'kilde-crash-data-'));
    tmp = await mkdtemp(join(tmpdir(), 'kilde-crash-tmp-'));
    if (engine === 'qdrant') qdrant = await startQdrantFake();
  });
  afterAll(async () => {
    await kilde?.kill();
    await qdrant?.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(tmp, { recursive: true, force: true });
  });

  const env = () => ({
    KILDE_DATA_DIR: dataDir,
    TMPDIR: tmp,
    VECTORDB_INDEX: collection,
    ...(qdrant ? { VECTORDB_URI: qdrant.url } : {}),
    CHUNK_SPLIT_BY: 'passage',
    CHUNK_SIZE: '1',
    CHUNK_OVERLAP: '0',
    ENABLE_INSPECTION_API: 'true',
    // One ingest process: whatever it left behind is interrupted, at once.
    INGEST_SWEEP_GRACE: '0',
    INGEST_SWEEP_INTERVAL: '0',
  });

  async function ingest(k: Kilde, fileId: string, v: Variant): Promise<number | 'lost'> {
    const { body, headers } = multipartBody(
      { file_id: fileId, collection_name: `kb-${fileId}`, user_id: 'u1' },
      { name: `${fileId}.txt`, content: text(v), type: 'text/plain' },
    );
    try {
      const res = await fetch(`${k.url}/api/v1/ingest`, {
        method: 'PUT',
        headers: { ...AUTH, ...headers },
        body,
      });
      await res.arrayBuffer();
      return res.status;
    } catch {
      return 'lost'; // the connection died with the process
    }
  }

  /** Every chunk of the file, through the inspection API (the whole scroll, page by page). */
  async function chunksOf(k: Kilde, fileId: string) {
    const chunks: {
      split_id: number;
      content: string;
      meta: { ingest_version: string; collection_name: string };
    }[] = [];
    let offset: string | undefined;
    do {
      const qs = new URLSearchParams({
        limit: '1000',
        include_content: 'full',
        ...(offset ? { offset } : {}),
      });
      const res = await fetch(`${k.url}/api/v1/documents/${encodeURIComponent(fileId)}/chunks?${qs}`, {
        headers: AUTH,
      });
      expect(res.status).toBe(200);
      const page = (await res.json()) as { chunks: typeof chunks; next_offset?: string };
      chunks.push(...page.chunks);
      offset = page.next_offset;
    } while (offset);
    return chunks;
  }

  async function search(k: Kilde, fileId: string, query: string) {
    const res = await fetch(`${k.url}/search`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ queries: [query], collection_names: [`kb-${fileId}`], k: 10 }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { documents: string[][] };
    return body.documents[0] ?? [];
  }

  /** The file holds exactly one complete version: `v`'s, every paragraph once, in order. */
  async function expectOneComplete(k: Kilde, fileId: string, v: Variant) {
    const chunks = await chunksOf(k, fileId);
    expect(new Set(chunks.map((c) => c.meta.ingest_version)).size, `${fileId}: one version`).toBe(1);
    expect(chunks.map((c) => c.split_id).sort((a, b) => a - b)).toEqual(
      Array.from({ length: v.paragraphs }, (_, i) => i),
    );
    for (const c of chunks) expect(c.content).toContain(` of ${v.tag} `);
    const hits = await search(k, fileId, `${v.tag}p1`);
    expect(hits.length, `${fileId}: searchable`).toBeGreaterThan(0);
    for (const h of hits) expect(h).toContain(` of ${v.tag} `);
  }

  it(`${rounds} kills of ${FILES} concurrent re-ingests: one complete version each, nothing left over`, async () => {
    const rand = mulberry32(settings.seed ^ (engine === 'lancedb' ? 0x1ced : 0xd1ce));
    const paragraphs = () => 600 + Math.floor(rand() * 1400);
    const files = Array.from({ length: FILES }, (_, i) => `doc${i}`);
    const current = new Map<string, Variant>();

    kilde = await startKilde('all', env());
    // The first versions, then one uninterrupted re-ingest round whose duration scales the kill points.
    let span = 0;
    for (const pass of ['a', 'b']) {
      const started = performance.now();
      await Promise.all(
        files.map(async (f) => {
          const v = { tag: `${f}r0${pass}`, paragraphs: paragraphs() };
          expect(await ingest(kilde!, f, v)).toBe(200);
          current.set(f, v);
        }),
      );
      span = performance.now() - started;
    }

    const outcomes = { before: 0, after: 0, acknowledged: 0 };
    for (let round = 1; round <= rounds; round++) {
      let committed = 0;
      const next = new Map(files.map((f) => [f, { tag: `${f}r${round}`, paragraphs: paragraphs() }]));
      const k: Kilde = kilde;
      const answers = files.map(
        (f) =>
          new Promise<number | 'lost'>((resolve) => {
            setTimeout(() => resolve(ingest(k, f, next.get(f)!)), rand() * span * 0.25);
          }),
      );
      // Refused before anything is written, whatever happens next.
      const hostile = await fetch(`${k.url}/api/v1/ingest`, {
        method: 'PUT',
        headers: { ...AUTH, 'content-type': 'application/json' },
        body: JSON.stringify({
          bucket: 'b',
          key: `k${round}`,
          file_id: `evil\u0000${round}`,
          collection_name: 'kb-doc0',
          user_id: 'u1',
        }),
      });
      expect(hostile.status).toBe(400);
      await new Promise((r) => setTimeout(r, (0.1 + rand() * 0.9) * span));
      await k.kill();
      const statuses = await Promise.all(answers);

      kilde = await startKilde('all', env());
      for (const f of files) {
        const chunks = await chunksOf(kilde, f);
        const tag = /of (doc\d+r\w+) /.exec(chunks[0]?.content ?? '')?.[1];
        const old = current.get(f)!;
        const fresh = next.get(f)!;
        const status = statuses[files.indexOf(f)];
        // Acknowledged means durable: a 200 before the kill must have survived it.
        if (status === 200) {
          outcomes.acknowledged += 1;
          expect(tag, `${f} round ${round}: acknowledged`).toBe(fresh.tag);
        }
        expect([old.tag, fresh.tag], `${f} round ${round}`).toContain(tag);
        const survivor = tag === fresh.tag ? fresh : old;
        outcomes[survivor === fresh ? 'after' : 'before'] += 1;
        if (survivor === fresh) committed += 1;
        await expectOneComplete(kilde, f, survivor);
        current.set(f, survivor);
      }
      // Ingests slow down as the index grows: keep the kills spread over the whole re-ingest by
      // steering toward rounds where some re-ingests committed and some did not.
      if (committed === 0) span *= 1.3;
      else if (committed === FILES) span *= 0.75;
      for (const id of [`evil\u0000${round}`, `evil${round}`]) expect(await chunksOf(kilde, id)).toEqual([]);
    }
    process.stdout.write(
      `crash ${engine}: ${rounds * FILES} interrupted re-ingests; old version kept ${outcomes.before}, new committed ${outcomes.after} (${outcomes.acknowledged} acknowledged before the kill)\n`,
    );

    // Nothing left over: no staging, no writing entries, one committed record per file, no upload folders.
    expect(await kilde.stop()).toBe(0);
    kilde = undefined;
    const log = pino({ level: 'silent' });
    const index: VectorIndex =
      engine === 'qdrant'
        ? await openIndex({ uri: qdrant!.url, collection, sparse: true, timeoutMs: 30_000 }, { log })
        : await createLanceIndex(
            { uri: join(dataDir, 'lancedb'), collection, sparse: true, timeoutMs: 30_000 },
            { log },
            { readConsistencySeconds: 0 },
          );
    try {
      expect(await index.count({ reserved: 'staging' })).toBe(0);
      expect(await index.count({ reserved: 'writing' })).toBe(0);
      const records = (await index.scroll({ reserved: 'committed' }, { limit: 100 })).points;
      expect(records.map((r) => r.meta.file_id).sort()).toEqual(files);
      let chunks = 0;
      for (const f of files) {
        const survivor = current.get(f)!;
        chunks += survivor.paragraphs;
        const versions = new Set<string>();
        let cursor: string | undefined;
        do {
          const page = await index.scroll(
            { fileId: f, chunksOnly: true },
            { limit: 1000, ...(cursor ? { cursor } : {}) },
          );
          for (const p of page.points) versions.add(p.meta.ingest_version);
          cursor = page.next;
        } while (cursor);
        expect([...versions]).toEqual([records.find((r) => r.meta.file_id === f)!.meta.ingest_version]);
      }
      expect(await index.count({ chunksOnly: true })).toBe(chunks);
      // + one committed-version record per file, + the index's recorded settings (one entry).
      expect(await index.count({})).toBe(chunks + files.length + 1);
      expect(await index.count({ reserved: 'settings' })).toBe(1);
    } finally {
      await index.close();
    }
    expect(await readdir(join(tmp, 'kilde-uploads')).catch(() => [])).toEqual([]);
    if (qdrant) expect(qdrant.violations).toEqual([]);
  });

  interface Listed {
    version: string;
    live: boolean;
  }
  async function versionsOf(k: Kilde, fileId: string): Promise<Listed[]> {
    const res = await fetch(`${k.url}/api/v1/documents/${encodeURIComponent(fileId)}/versions`, {
      headers: AUTH,
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { versions: Listed[] }).versions;
  }
  async function restore(k: Kilde, fileId: string, version: string): Promise<number | 'lost'> {
    try {
      const res = await fetch(
        `${k.url}/api/v1/documents/${encodeURIComponent(fileId)}/versions/${version}/restore`,
        {
          method: 'POST',
          headers: AUTH,
        },
      );
      await res.arrayBuffer();
      return res.status;
    } catch {
      return 'lost';
    }
  }

  // Fewer and smaller than the re-ingests above: a restore only moves versions, so kills land in it sooner.
  const restoreRounds = settings.long ? rounds : Math.min(rounds, 3);
  it(`${restoreRounds} kills of ${FILES} concurrent restores: one complete version each, the other still kept`, async () => {
    const rand = mulberry32(settings.seed ^ (engine === 'lancedb' ? 0x5e57 : 0x7e57));
    const files = Array.from({ length: FILES }, (_, i) => `rdoc${i}`);
    const restoreEnv = { ...env(), VECTORDB_INDEX: `${collection}_restore`, KEEP_VERSIONS: '2' };
    /** Which text each version id holds. */
    const variants = new Map<string, Variant>();
    kilde = await startKilde('all', restoreEnv);
    for (const pass of ['a', 'b']) {
      await Promise.all(
        files.map(async (f) => {
          const v = { tag: `${f}v${pass}`, paragraphs: 300 + Math.floor(rand() * 600) };
          expect(await ingest(kilde!, f, v)).toBe(200);
          const live = (await versionsOf(kilde!, f)).find((x) => x.live)!;
          variants.set(live.version, v);
        }),
      );
    }
    /** Live and kept version of each file: restoring the kept one swaps them. */
    const state = async (k: Kilde) =>
      new Map(
        await Promise.all(
          files.map(async (f) => {
            const listed = await versionsOf(k, f);
            expect(
              listed.filter((x) => x.live),
              `${f}: one live version`,
            ).toHaveLength(1);
            // Nothing lost: both versions stay listed, whatever was interrupted.
            expect(listed.map((x) => x.version).sort(), `${f}: both versions kept`).toEqual(
              [...variants.keys()].filter((id) => variants.get(id)!.tag.startsWith(`${f}v`)).sort(),
            );
            return [
              f,
              { live: listed.find((x) => x.live)!.version, kept: listed.find((x) => !x.live)!.version },
            ] as const;
          }),
        ),
      );

    // One uninterrupted round of restores scales the kill points.
    let before = await state(kilde);
    let started = performance.now();
    for (const status of await Promise.all(files.map((f) => restore(kilde!, f, before.get(f)!.kept)))) {
      expect(status).toBe(200);
    }
    let span = performance.now() - started;

    const outcomes = { kept: 0, restored: 0, acknowledged: 0 };
    for (let round = 1; round <= restoreRounds; round++) {
      const k: Kilde = kilde;
      before = await state(k);
      const answers = files.map(
        (f) =>
          new Promise<number | 'lost'>((resolve) => {
            setTimeout(() => resolve(restore(k, f, before.get(f)!.kept)), rand() * span * 0.25);
          }),
      );
      started = performance.now();
      await new Promise((r) => setTimeout(r, (0.1 + rand() * 0.9) * span));
      await k.kill();
      const statuses = await Promise.all(answers);

      kilde = await startKilde('all', restoreEnv);
      const after = await state(kilde);
      let swapped = 0;
      for (const [i, f] of files.entries()) {
        const live = after.get(f)!.live;
        const was = before.get(f)!;
        expect([was.live, was.kept], `${f} round ${round}`).toContain(live);
        // Acknowledged means durable: a 200 before the kill must have survived it.
        if (statuses[i] === 200) {
          outcomes.acknowledged += 1;
          expect(live, `${f} round ${round}: acknowledged restore`).toBe(was.kept);
        }
        if (live === was.kept) swapped += 1;
        outcomes[live === was.kept ? 'restored' : 'kept'] += 1;
        await expectOneComplete(kilde, f, variants.get(live)!);
      }
      if (swapped === 0) span *= 1.3;
      else if (swapped === FILES) span *= 0.75;
    }
    process.stdout.write(
      `crash ${engine}: ${restoreRounds * FILES} interrupted restores; previous version kept ${outcomes.kept}, restore committed ${outcomes.restored} (${outcomes.acknowledged} acknowledged before the kill)\n`,
    );
    expect(await kilde.stop()).toBe(0);
    kilde = undefined;
    if (qdrant) expect(qdrant.violations).toEqual([]);
  });
});
