import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/*
 * The order in which `npm test` starts its files (vitest.config.ts): longest first over all the
 * projects together, so that the files of a few minutes (the crash and fuzz suites, the jobs on
 * Redis) start at once beside the rest instead of last, and the run ends on short files on both
 * workers. Vitest's own order runs the projects one after another by name, and would start the
 * longest file of the last project only after every other project's files.
 */

/** Projects whose files start processes: with no time recorded yet, they start before the in-process ones. */
const STARTS_PROCESSES = new Set(['process', 'reliability', 'browser']);

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { cache, config } = this.ctx;
    const known = (spec: TestSpecification) => {
      const key = `${spec.project.name}:${relative(config.root, spec.moduleId)}`;
      return { result: cache.getFileTestResults(key), size: cache.getFileStats(key)?.size ?? 0 };
    };
    const order = files.map((spec) => ({ spec, ...known(spec) }));
    order.sort((a, b) => {
      // A file that failed last time runs first (its answer is the one wanted soonest).
      const failed = Number(Boolean(b.result?.failed)) - Number(Boolean(a.result?.failed));
      if (failed !== 0) return failed;
      if (a.result && b.result) return b.result.duration - a.result.duration;
      // Without a recorded time (a fresh clone, a new file): process-starting projects, then the larger file.
      const heavy =
        Number(STARTS_PROCESSES.has(b.spec.project.name)) - Number(STARTS_PROCESSES.has(a.spec.project.name));
      if (!a.result && !b.result) return heavy !== 0 ? heavy : b.size - a.size;
      // A file never timed before one that has been: it may be long, and it is seen early.
      return a.result ? 1 : -1;
    });
    return order.map((o) => o.spec);
  }
}
