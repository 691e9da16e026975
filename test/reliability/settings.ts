/**
 * How big a reliability run is. `npm test` runs the CI size; `npm run test:reliability -- --long`
 * (scripts/test-reliability.mjs) sets KILDE_RELIABILITY_LONG=1 for the longer mode and the soak.
 * Every random choice derives from one seed, printed at the start, so a failing run can be
 * replayed with `--seed` (or KILDE_RELIABILITY_SEED).
 */
export interface ReliabilitySettings {
  long: boolean;
  /**
   * Time-out of one test (ms): the suite runs beside everything else in `npm test` on two cores,
   * where a property of hundreds of real ingests can take minutes; it bounds, never measures.
   */
  timeoutMs: number;
  seed: number;
  /** Soak duration and target rate (requests per second), `--long` only. */
  soakMinutes: number;
  soakRate: number;
  /** Variables the soak's server gets besides its own (KILDE_SOAK_ENV, a JSON object of strings). */
  soakEnv: Record<string, string>;
}

function int(raw: string | undefined, fallback: number): number {
  const n = raw === undefined || raw.trim() === '' ? Number.NaN : Number(raw);
  return Number.isSafeInteger(n) ? n : fallback;
}

function stringRecord(raw: string | undefined): Record<string, string> {
  if (raw === undefined || raw.trim() === '') return {};
  const parsed: unknown = JSON.parse(raw);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error('KILDE_SOAK_ENV must be a JSON object of strings');
  return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]));
}

export function reliabilitySettings(suite: string): ReliabilitySettings {
  const env = process.env;
  const long = env.KILDE_RELIABILITY_LONG === '1';
  const settings: ReliabilitySettings = {
    long,
    timeoutMs: long ? 3_600_000 : 300_000,
    seed: int(env.KILDE_RELIABILITY_SEED, Date.now() % 2_147_483_647),
    soakMinutes: int(env.KILDE_SOAK_MINUTES, 5),
    soakRate: int(env.KILDE_SOAK_RATE, 20),
    soakEnv: stringRecord(env.KILDE_SOAK_ENV),
  };
  process.stdout.write(
    `reliability ${suite}: seed ${settings.seed} (${settings.long ? 'long' : 'CI'} size); replay with KILDE_RELIABILITY_SEED=${settings.seed}\n`,
  );
  return settings;
}
