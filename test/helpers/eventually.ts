/** What `check` returns once it holds: `false`, `0`, `''`, `null` and `undefined` mean not yet. */
type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Polls `check` until it returns something truthy, `everyMs` apart, and returns that. It has no
 * deadline of its own: the test's time-out is the bound, so a loaded machine makes a test slower,
 * never red. For what a test cannot be told directly (another connection's commit becoming
 * visible, a job reaching a stage in another part, a folder removed after the answer was sent);
 * where the code under test takes a `Clock`, advance a `ManualClock` instead (helpers/clock.ts).
 */
export async function eventually<T>(check: () => T | Promise<T>, everyMs = 10): Promise<Truthy<T>> {
  for (;;) {
    const value = await check();
    if (value) return value as Truthy<T>;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
