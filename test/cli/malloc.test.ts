import { readFileSync } from 'node:fs';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { applyMallocTunables, MMAP_THRESHOLD_TUNABLE, withMallocTunables } from '../../src/cli/malloc.js';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { WorkerPool } from '../../src/pool/worker-pool.js';
import { ManualClock } from '../helpers/clock.js';

const root = new URL('../../', import.meta.url);

describe('the allocator tunable', () => {
  it('is added to an operator’s own GLIBC_TUNABLES, never replacing a threshold they chose', () => {
    expect(withMallocTunables(undefined)).toBe(MMAP_THRESHOLD_TUNABLE);
    expect(withMallocTunables('  ')).toBe(MMAP_THRESHOLD_TUNABLE);
    expect(withMallocTunables('glibc.malloc.arena_max=2')).toBe(
      `glibc.malloc.arena_max=2:${MMAP_THRESHOLD_TUNABLE}`,
    );
    expect(withMallocTunables('glibc.malloc.mmap_threshold=65536')).toBe('glibc.malloc.mmap_threshold=65536');
    expect(withMallocTunables('glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=1048576')).toBe(
      'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=1048576',
    );
  });

  it('is set before Node starts by `npm start` and the Docker image, with the same value', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.start).toBe(
      `GLIBC_TUNABLES=\${GLIBC_TUNABLES:-${MMAP_THRESHOLD_TUNABLE}} node bin/kilde.js quickstart`,
    );
    const dockerfile = readFileSync(new URL('Dockerfile', root), 'utf8');
    expect(dockerfile).toMatch(new RegExp(`^\\s+GLIBC_TUNABLES=${MMAP_THRESHOLD_TUNABLE}$`, 'm'));
  });

  describe('once the CLI has applied it', () => {
    const saved = process.env.GLIBC_TUNABLES;
    afterAll(() => {
      if (saved === undefined) delete process.env.GLIBC_TUNABLES;
      else process.env.GLIBC_TUNABLES = saved;
    });

    it('reaches the extraction pool’s worker processes', async () => {
      delete process.env.GLIBC_TUNABLES;
      applyMallocTunables(process.env);
      const pool = new WorkerPool(
        {
          size: 1,
          heapMb: 128,
          timeoutMs: 60_000,
          setup: {
            limits: DEFAULT_LIMITS,
            chunking: { settings: { mode: 'markdown', size: 60, overlap: 10 }, counter: 'approximate' },
          },
        },
        { log: pino({ level: 'silent' }), clock: new ManualClock() },
      );
      try {
        await pool.run({ kind: 'chunk', docs: [] });
        const [pid] = pool.pids;
        expect(pid).toBeGreaterThan(0);
        const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
        expect(environ).toContain(`GLIBC_TUNABLES=${MMAP_THRESHOLD_TUNABLE}`);
      } finally {
        await pool.close();
      }
    });
  });
});
