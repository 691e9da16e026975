import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import {
  applyProcessMemorySettings,
  MMAP_THRESHOLD_TUNABLE,
  withMallocTunables,
  withYoungGenerationFlag,
  YOUNG_GENERATION_FLAG,
} from '../../src/cli/process-memory.js';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { INGEST_POOL, type IngestTasks } from '../../src/ingest/pool.js';
import { WorkerPool } from '../../src/pool/worker-pool.js';
import { ManualClock } from '../helpers/clock.js';

const root = new URL('../../', import.meta.url);

describe('the process memory settings', () => {
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

  it('add the young generation’s size to NODE_OPTIONS, never replacing a size the operator chose', () => {
    expect(withYoungGenerationFlag(undefined)).toBe(YOUNG_GENERATION_FLAG);
    expect(withYoungGenerationFlag(' ')).toBe(YOUNG_GENERATION_FLAG);
    expect(withYoungGenerationFlag('--enable-source-maps')).toBe(
      `--enable-source-maps ${YOUNG_GENERATION_FLAG}`,
    );
    expect(withYoungGenerationFlag('--max-semi-space-size=32')).toBe('--max-semi-space-size=32');
    expect(withYoungGenerationFlag('--trace-gc --max-semi-space-size 2')).toBe(
      '--trace-gc --max-semi-space-size 2',
    );
    // A different flag that merely starts the same way is not the operator's choice of this one.
    expect(withYoungGenerationFlag('--max-semi-space-sizes=1')).toBe(
      `--max-semi-space-sizes=1 ${YOUNG_GENERATION_FLAG}`,
    );
  });

  it('are set before Node starts by the `kilde` launcher, `npm start` and the Docker image', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
      scripts: Record<string, string>;
      bin: Record<string, string>;
    };
    expect(pkg.bin.kilde).toBe('bin/kilde');
    expect(pkg.scripts.start).toBe('bin/kilde quickstart');
    const dockerfile = readFileSync(new URL('Dockerfile', root), 'utf8');
    expect(dockerfile).toMatch(new RegExp(`^\\s+GLIBC_TUNABLES=${MMAP_THRESHOLD_TUNABLE} \\\\$`, 'm'));
    expect(dockerfile).toMatch(new RegExp(`^\\s+NODE_OPTIONS=${YOUNG_GENERATION_FLAG}$`, 'm'));
  });

  describe('the `kilde` launcher', () => {
    const launcher = fileURLToPath(new URL('bin/kilde', root));
    const probe = fileURLToPath(new URL('../helpers/print-process-memory.cjs', import.meta.url));
    /** What the Node process the launcher started saw: its GLIBC_TUNABLES and NODE_OPTIONS. */
    const seen = (env: Record<string, string>) => {
      const r = spawnSync(launcher, ['--version'], {
        env: { PATH: process.env.PATH ?? '', ...env },
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
      const line = r.stderr.split('\n').find((l) => l.startsWith('process-memory '));
      return JSON.parse(line?.slice('process-memory '.length) ?? '{}') as Record<string, string>;
    };

    it('starts Node with both settings and runs the CLI', () => {
      expect(seen({ NODE_OPTIONS: `--require ${probe}` })).toEqual({
        GLIBC_TUNABLES: MMAP_THRESHOLD_TUNABLE,
        NODE_OPTIONS: `--require ${probe} ${YOUNG_GENERATION_FLAG}`,
      });
    });

    it('keeps an operator’s own values, adding only what they do not name', () => {
      expect(
        seen({
          NODE_OPTIONS: `--require ${probe} --max-semi-space-size=32`,
          GLIBC_TUNABLES: 'glibc.malloc.arena_max=2',
        }),
      ).toEqual({
        GLIBC_TUNABLES: `glibc.malloc.arena_max=2:${MMAP_THRESHOLD_TUNABLE}`,
        NODE_OPTIONS: `--require ${probe} --max-semi-space-size=32`,
      });
      expect(
        seen({ NODE_OPTIONS: `--require ${probe}`, GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536' })
          .GLIBC_TUNABLES,
      ).toBe('glibc.malloc.mmap_threshold=65536');
    });
  });

  describe('once the CLI has applied it', () => {
    const saved = { GLIBC_TUNABLES: process.env.GLIBC_TUNABLES, NODE_OPTIONS: process.env.NODE_OPTIONS };
    afterAll(() => {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    });

    it('reaches the extraction pool’s worker processes', async () => {
      delete process.env.GLIBC_TUNABLES;
      delete process.env.NODE_OPTIONS;
      applyProcessMemorySettings(process.env);
      const pool = new WorkerPool<IngestTasks>(
        {
          ...INGEST_POOL,
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
        expect(environ).toContain(`NODE_OPTIONS=${YOUNG_GENERATION_FLAG}`);
      } finally {
        await pool.close();
      }
    });
  });
});
