import type { AddressInfo } from 'node:net';
import { type RetrieveConfig, retrieveSchema } from '../../../src/config/retrieve.js';
import { buildApp, type KildeApp } from '../../../src/http/app.js';
import { createLogger } from '../../../src/http/logger.js';
import { createRetrievePart, type RetrieveDeps } from '../../../src/retrieve/part.js';
import { logSink, testConfig } from '../../helpers/app.js';

/** The parsed answer: search lists on 200, `{detail, code}` otherwise. */
export interface SearchJson {
  documents: string[][];
  metadatas: Record<string, unknown>[][];
  distances: number[][];
  detail?: string;
  code?: string;
}

export interface RetrieveHarness {
  app: KildeApp;
  url: string;
  config: RetrieveConfig;
  logs: ReturnType<typeof logSink>;
  search(
    body: unknown,
    headers?: Record<string, string>,
    path?: string,
    // biome-ignore lint/suspicious/noExplicitAny: tests index into the parsed answer freely; the assertions check its shape
  ): Promise<{ status: number; json: any; headers: Headers }>;
  /** `GET /metrics` as text. */
  metrics(): Promise<string>;
  close(): Promise<void>;
}

/** `kilde serve retrieve` in process, listening on a real loopback port. */
export async function startRetrieve(
  env: Record<string, string>,
  deps: Omit<RetrieveDeps, 'log'> = {},
): Promise<RetrieveHarness> {
  const config = testConfig(retrieveSchema, { ENABLE_QUERY_GENERATION: 'false', ...env });
  const logs = logSink();
  const log = createLogger({ ...config, LOG_LEVEL_APP: 'debug' }, logs.stream);
  const part = await createRetrievePart(config, { log, ...deps });
  const app = await buildApp(config, { logger: log, parts: [part] });
  await part.start?.();
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    app,
    url,
    config,
    logs,
    async search(body, headers = { authorization: 'Bearer test-key' }, path = '/search') {
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as SearchJson, headers: res.headers };
    },
    async metrics() {
      const res = await fetch(`${url}/metrics`, { headers: { authorization: 'Bearer test-key' } });
      return res.text();
    },
    close: () => app.close(),
  };
}
