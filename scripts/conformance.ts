import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`, offline) against a
 * running MCP endpoint, with conformance-baseline.yml as the expected failures. The suite's CLI
 * exits non-zero on an unexpected failure and on a stale baseline entry.
 *
 *   npx tsx scripts/conformance.ts http://127.0.0.1:8000/mcp
 *
 * The URL must be a loopback address: the DNS-rebinding scenario only runs against one.
 */
export const BASELINE = fileURLToPath(new URL('../conformance-baseline.yml', import.meta.url));

export interface ConformanceRun {
  code: number;
  output: string;
}

export async function runConformance(url: string, o: { timeoutMs?: number } = {}): Promise<ConformanceRun> {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('@modelcontextprotocol/conformance/package.json');
  const cli = join(dirname(pkg), 'dist', 'index.js');
  // Results go to a scratch directory (the CLI writes `results/` into its cwd otherwise).
  const out = await mkdtemp(join(tmpdir(), 'kilde-conformance-'));
  try {
    return await new Promise<ConformanceRun>((resolve) => {
      execFile(
        process.execPath,
        [cli, 'server', '--url', url, '--expected-failures', BASELINE, '--output-dir', out],
        { timeout: o.timeoutMs ?? 120_000, cwd: out, maxBuffer: 16 * 1024 * 1024 },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
          resolve({ code, output: `${stdout}${stderr}` });
        },
      );
    });
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const url = process.argv[2] ?? 'http://127.0.0.1:8000/mcp';
  const run = await runConformance(url);
  process.stdout.write(run.output);
  process.exit(run.code);
}
