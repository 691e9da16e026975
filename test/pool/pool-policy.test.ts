import { describe, expect, it } from 'vitest';
import {
  BACKLOG_MS,
  BACKLOG_WORK_MS,
  estimateMs,
  MS_PER_MIB,
  type Queued,
  STALL_MS,
  warranted,
} from '../../src/pool/pool-policy.js';

/*
 * When queued work pays for another worker (pool-policy.ts, `warranted`), as the pool asks it while
 * every worker it has is busy: times are the pool's clock, in ms.
 */
const MiB = 1024 * 1024;
/** The busy workers as the pool reads them: a turn started at 0, estimated at nothing. */
const justStarted = { lastStart: 0, longestMs: 0 };
const task = (weight: number | undefined, affinity: string[] = [], queuedAt = 0): Queued => ({
  weight,
  affinity,
  queuedAt,
});

describe('a second worker only on a backlog', () => {
  it('a DOCX, a PDF or small text waiting for the busy worker is no reason', () => {
    const queue = [task(15_000, ['docx']), task(360_000, ['pdf']), task(2_000), task(40_000)];
    expect(warranted(queue, 10, justStarted)).toBeUndefined();
  });

  it('queued work estimated past BACKLOG_WORK_MS is, whatever its kind', () => {
    const docx = (BACKLOG_WORK_MS / MS_PER_MIB.docx!) * MiB;
    expect(warranted([task(docx * 0.9, ['docx'])], 0, justStarted)).toBeUndefined();
    expect(warranted([task(docx * 0.6, ['docx']), task(docx * 0.6, ['docx'])], 0, justStarted)).toBe(
      'backlog',
    );
    const text = (BACKLOG_WORK_MS / MS_PER_MIB['']!) * MiB;
    expect(warranted([task(text * 0.5), task(text * 0.6)], 0, justStarted)).toBe('backlog');
    // A library the table does not know counts at least as dear as a PDF.
    expect(estimateMs(task(MiB, ['djvu']))).toBeGreaterThanOrEqual(estimateMs(task(MiB, ['pdf'])));
  });

  it('a task of unknown size is (a PDF read in parts asks for a second worker so)', () => {
    expect(warranted([task(2_000), task(undefined, ['pdf'])], 0, justStarted)).toBe('unknown size');
  });

  it('work that has waited BACKLOG_MS since the last task started, behind a long turn, is', () => {
    const queue = [task(2_000, [], 100), task(15_000, ['docx'], 200)];
    const pdf = { lastStart: 0, longestMs: estimateMs(task(20 * MiB, ['pdf'])) };
    expect(warranted(queue, 100 + BACKLOG_MS - 1, pdf)).toBeUndefined();
    expect(warranted(queue, 100 + BACKLOG_MS, pdf)).toBe('waited');
    // A task started meanwhile: the queue moves, the wait counts from there.
    const moved = { ...pdf, lastStart: 600 };
    expect(warranted(queue, 100 + BACKLOG_MS, moved)).toBeUndefined();
    expect(warranted(queue, 600 + BACKLOG_MS, moved)).toBe('waited');
  });

  it('behind turns estimated short it takes STALL_MS: they ran long because the cores are busy', () => {
    const queue = [task(2_000, [], 100)];
    const short = { lastStart: 100, longestMs: estimateMs(task(200_000, ['docx'])) };
    expect(warranted(queue, 100 + BACKLOG_MS, short)).toBeUndefined();
    expect(warranted(queue, 100 + STALL_MS - 1, short)).toBeUndefined();
    expect(warranted(queue, 100 + STALL_MS, short)).toBe('waited');
  });
});
