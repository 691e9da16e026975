import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The real launcher, over the built dist/ (`npm test` builds before vitest runs). */
export const BIN = fileURLToPath(new URL('../../bin/kilde.js', import.meta.url));
export const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** A clean environment: nothing from the runner's shell leaks into the child's configuration. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), LOG_FORMAT: 'json', ...extra };
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `kilde <args>` to completion (stdout is a pipe, so never a TTY). */
export function runCli(args: string[], env: NodeJS.ProcessEnv, cwd = REPO): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A long-running `kilde` process whose output is collected as it arrives. */
export class Server {
  output = '';
  private readonly exited: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    child.stdout?.on('data', (d: Buffer) => {
      this.output += d.toString('utf8');
    });
    child.stderr?.on('data', (d: Buffer) => {
      this.output += d.toString('utf8');
    });
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  }

  static start(args: string[], env: NodeJS.ProcessEnv, cwd = REPO): Server {
    return new Server(
      spawn(process.execPath, [BIN, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
  }

  /** Resolves with the first match of `re` in the output so far or to come. */
  async waitFor(re: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = this.output.match(re);
      if (m) return m;
      if (this.child.exitCode !== null)
        throw new Error(`kilde exited (${this.child.exitCode}):\n${this.output}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${re}:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** SIGTERM, the way an orchestrator stops it; resolves with the exit code. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
    return this.exited;
  }
}

export async function tempDir(prefix: string) {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Parses the JSON lines of a non-TTY `kilde ingest`. */
export function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
