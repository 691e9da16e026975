import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mulberry32, percentile } from '../../bench/lib/stats.js';
import { applyProcessMemorySettings } from '../../src/cli/process-memory.js';
import { multipartBody } from '../ingest/helpers/harness.js';
import { AUTH, type Kilde, startKilde } from './child.js';
import { reliabilitySettings } from './settings.js';

/**
 * Soak (`npm run test:reliability -- --long` only; KILDE_SOAK_MINUTES, KILDE_SOAK_RATE): a real
 * `kilde serve all` under a mixed load of re-ingests and searches at a fixed arrival rate for N
 * minutes, with a deployment's memory settings (GLIBC_TUNABLES, NODE_OPTIONS; KILDE_SOAK_ENV, a JSON
 * object, adds variables). Prints throughput, p50/p99 per kind and the process's RSS at the start,
 * every minute (with what LanceDB's bounded caches hold of it) and at the end (RSS that levels off:
 * no leak). Fails on any failed request; times are reported, never asserted.
 */
const settings = reliabilitySettings('soak');
const FILES = 40;

function doc(file: number, round: number, paragraphs: number): string {
  return Array.from(
    { length: paragraphs },
    (_, i) => `Section ${i} of file ${file} revision ${round} covers permits, waste and parking rule ${i}.`,
  ).join('\n\n');
}

describe.skipIf(!settings.long)('soak: mixed ingest and search', () => {
  let kilde: Kilde | undefined;
  let dir: string | undefined;
  afterAll(async () => {
    await kilde?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it(
    `${settings.soakMinutes} min at ${settings.soakRate} req/s`,
    async () => {
      dir = await mkdtemp(join(tmpdir(), 'kilde-soak-'));
      // The memory settings a deployment runs with (the launcher's, npm start's, the image's), plus
      // whatever KILDE_SOAK_ENV (a JSON object) adds, e.g. other LanceDB cache bounds to compare.
      const memory: Record<string, string | undefined> = {};
      applyProcessMemorySettings(memory);
      kilde = await startKilde('all', {
        KILDE_DATA_DIR: dir,
        TMPDIR: dir,
        GLIBC_TUNABLES: memory.GLIBC_TUNABLES ?? '',
        NODE_OPTIONS: memory.NODE_OPTIONS ?? '',
        ...settings.soakEnv,
      });
      const k = kilde;
      const rand = mulberry32(settings.seed);
      const rounds = new Map<number, number>();

      const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;

      async function ingest(): Promise<number> {
        const file = Math.floor(rand() * FILES);
        const round = (rounds.get(file) ?? 0) + 1;
        rounds.set(file, round);
        const { body, headers } = multipartBody(
          { file_id: `soak-${file}`, collection_name: `kb-${file % 4}`, user_id: 'u1' },
          {
            name: `f${file}.md`,
            content: doc(file, round, 20 + Math.floor(rand() * 200)),
            type: 'text/markdown',
          },
        );
        const res = await fetch(`${k.url}/api/v1/ingest`, {
          method: 'PUT',
          headers: { ...AUTH, ...headers },
          body,
        });
        await res.arrayBuffer();
        return res.status;
      }
      async function search(): Promise<number> {
        const words = ['permits', 'waste', 'parking', 'rule', 'section', 'revision'];
        const query = `${words[Math.floor(rand() * words.length)]} rule ${Math.floor(rand() * 200)}`;
        const res = await fetch(`${k.url}/search`, {
          method: 'POST',
          headers: { ...AUTH, 'content-type': 'application/json' },
          body: JSON.stringify({
            queries: [query],
            collection_names: [`kb-${Math.floor(rand() * 4)}`],
            k: 5,
          }),
        });
        await res.arrayBuffer();
        return res.status;
      }

      // Warm-up: every file once, so RSS at the start already holds a populated index.
      for (let f = 0; f < FILES; f += 8) await Promise.all(Array.from({ length: 8 }, () => ingest()));
      const rssStart = await k.rss();
      const latencies = { ingest: [] as number[], search: [] as number[] };
      // Once a minute: RSS and what LanceDB's caches hold of it (bounded, docs/operations.md), and the
      // p99 of the ingests answered in that minute (does the tail move as the server ages?).
      const samples: string[] = [];
      const tails: string[] = [];
      let answered = 0;
      const sample = async () => {
        const metrics = await (await fetch(`${k.url}/metrics`, { headers: AUTH })).text();
        const cache = Number(/^lancedb_cache_bytes (\d+)$/m.exec(metrics)?.[1]);
        samples.push(`${mib(await k.rss())} (caches ${mib(cache)})`);
        const minute = latencies.ingest.slice(answered).sort((a, b) => a - b);
        answered = latencies.ingest.length;
        if (minute.length > 0) tails.push(percentile(minute, 99).toFixed(0));
      };
      await sample();
      const sampler = setInterval(() => void sample().catch(() => undefined), 60_000);

      const failures: string[] = [];
      const inFlight = new Set<Promise<void>>();
      const started = performance.now();
      const end = started + settings.soakMinutes * 60_000;
      let sent = 0;
      // Open loop: arrivals at the target rate whatever the answers do (a slow server queues up).
      while (performance.now() < end) {
        const due = started + (sent * 1000) / settings.soakRate;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        sent += 1;
        const kind = rand() < 0.2 ? 'ingest' : 'search';
        const t0 = performance.now();
        const p = (kind === 'ingest' ? ingest() : search())
          .then((status) => {
            latencies[kind].push(performance.now() - t0);
            if (status !== 200) failures.push(`${kind} ${status}`);
          })
          .catch((err: unknown) => {
            failures.push(`${kind} ${String(err)}`);
          })
          .finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
      await Promise.all(inFlight);
      clearInterval(sampler);
      const seconds = (performance.now() - started) / 1000;
      await sample();
      const rssEnd = await k.rss();
      const stats = (xs: number[]) => {
        const sorted = [...xs].sort((a, b) => a - b);
        return `${xs.length} done, p50 ${percentile(sorted, 50).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms`;
      };
      process.stdout.write(
        [
          `soak: ${seconds.toFixed(0)} s, ${sent} requests sent at ${settings.soakRate}/s, ${((latencies.ingest.length + latencies.search.length) / seconds).toFixed(1)} answered/s`,
          `  ingest: ${stats(latencies.ingest)}`,
          `  search: ${stats(latencies.search)}`,
          `  RSS: ${mib(rssStart)} at the start, ${mib(rssEnd)} at the end`,
          `  RSS by minute: ${samples.join(', ')}`,
          `  ingest p99 by minute: ${tails.join(', ')} ms`,
          `  failures: ${failures.length}\n`,
        ].join('\n'),
      );
      expect(failures).toEqual([]);
      expect((await fetch(`${k.url}/health`)).status).toBe(200);
    },
    settings.soakMinutes * 60_000 + 300_000,
  );
});
