import { type DestinationStream, type Logger, pino } from 'pino';

export interface LogSettings {
  DEBUG: boolean;
  LOG_LEVEL_APP?: string | undefined;
  LOG_FORMAT?: 'auto' | 'json' | 'pretty' | undefined;
}

const LEVELS: Record<string, string> = {
  trace: 'trace',
  debug: 'debug',
  info: 'info',
  warning: 'warn',
  warn: 'warn',
  error: 'error',
  critical: 'fatal',
};

export function logLevel(s: LogSettings): string {
  if (s.LOG_LEVEL_APP) return LEVELS[s.LOG_LEVEL_APP.toLowerCase()] ?? 'info';
  return s.DEBUG ? 'debug' : 'info';
}

/** Paths never logged in clear: auth headers and anything that looks like a key. */
export const REDACT = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'headers.authorization',
  '*.apiKey',
  '*.api_key',
  '*.API_KEY',
  '*.AGENT_API_KEY',
  '*.EMBEDDING_API_KEY',
  '*.RERANK_API_KEY',
  '*.WEATHER_API_KEY',
  '*.VECTORDB_API_KEY',
  '*.OBJECTSTORE_SECRET_KEY',
  '*.LIBRECHAT_JWT_SECRET',
];

/**
 * The process logger: JSON lines, pretty only on a TTY (or when asked). Tests pass a destination
 * stream and assert on the lines.
 */
export function createLogger(s: LogSettings, destination?: DestinationStream): Logger {
  const options = {
    level: logLevel(s),
    redact: { paths: REDACT, censor: '[redacted]' },
    base: { pid: process.pid },
  };
  if (destination) return pino(options, destination);
  const pretty = s.LOG_FORMAT === 'pretty' || (s.LOG_FORMAT !== 'json' && process.stdout.isTTY === true);
  if (pretty)
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { destination: 1, singleLine: true } },
    });
  return pino(options);
}
