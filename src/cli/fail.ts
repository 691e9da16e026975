import { ConfigError, type Env } from '../config/parse.js';
import { logPiece } from '../config/shared.js';
import { describeCause } from '../errors.js';

/** A usage or runtime problem the CLI reports as one line (no stack trace) with its exit code. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly exitCode = 1,
    /** The server's error code (`EXTRACTION_FAILED`, ...), when there was one. */
    readonly code?: string,
  ) {
    super(message);
  }
}

/** Exit codes: 1 = the work failed (e.g. a file did not ingest), 2 = configuration or usage error. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof CliError) return err.exitCode;
  if (err instanceof ConfigError) return 2;
  return 1;
}

/** One line for any error; the stack only when DEBUG asks for it. */
export function describeError(err: unknown, debug: boolean): string {
  if (!(err instanceof Error)) return String(err);
  if (debug && !(err instanceof CliError) && !(err instanceof ConfigError)) return err.stack ?? err.message;
  return describeCause(err).replaceAll('\n', ' ');
}

/** DEBUG read like the services read it (`1`, `yes`, `TRUE`...); a malformed value counts as off here. */
export function debugOn(env: Env): boolean {
  return logPiece.DEBUG.safeParse(env.DEBUG).data === true;
}
