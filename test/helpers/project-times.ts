import type { Reporter, TestModule } from 'vitest/node';

/*
 * After a run, one line per Vitest project (vitest.config.ts): its files and tests, the wall time
 * from its first file's start to its last file's end (the projects run side by side, so these
 * spans overlap), and the time its files took, summed (each file's tests and hooks, on one worker).
 */

interface Tally {
  files: number;
  passed: number;
  failed: number;
  skipped: number;
  first: number;
  last: number;
  busy: number;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(0)} s`;

export default class ProjectTimes implements Reporter {
  readonly #started = new Map<string, number>();
  readonly #tally = new Map<string, Tally>();

  onTestModuleStart(module: TestModule): void {
    this.#started.set(module.moduleId, performance.now());
  }

  onTestModuleEnd(module: TestModule): void {
    const now = performance.now();
    const name = module.project.name || '(root)';
    const t = this.#tally.get(name) ?? {
      files: 0,
      passed: 0,
      failed: 0,
      skipped: 0,
      first: Number.POSITIVE_INFINITY,
      last: 0,
      busy: 0,
    };
    t.files += 1;
    for (const test of module.children.allTests()) {
      const state = test.result().state;
      if (state === 'passed') t.passed += 1;
      else if (state === 'failed') t.failed += 1;
      else t.skipped += 1;
    }
    t.first = Math.min(t.first, this.#started.get(module.moduleId) ?? now);
    t.last = Math.max(t.last, now);
    t.busy += module.diagnostic().duration;
    this.#tally.set(name, t);
  }

  onTestRunEnd(): void {
    if (this.#tally.size === 0) return;
    const rows = [...this.#tally].sort(([a], [b]) => a.localeCompare(b));
    const width = Math.max(...rows.map(([name]) => name.length));
    const lines = rows.map(
      ([name, t]) =>
        `  ${name.padEnd(width)}  ${String(t.files).padStart(3)} files  ${String(t.passed).padStart(4)} passed` +
        `${t.failed ? ` ${t.failed} failed` : ''}${t.skipped ? ` ${t.skipped} skipped` : ''}` +
        `  ${seconds(t.last - t.first).padStart(5)} from its first file to its last,` +
        ` ${seconds(t.busy).padStart(5)} in its files`,
    );
    process.stdout.write(`\n Per project (npm run test:<project> runs one):\n${lines.join('\n')}\n`);
  }
}
