import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type { IndexSettings } from '../../src/index/open.js';
import { createQdrantIndex, type QdrantDeps } from '../../src/index/qdrant.js';
import type { VectorIndex } from '../../src/index/store.js';

/**
 * Where the Qdrant tests run: the schema-validating fake (always) or a real Qdrant (`QDRANT_URL`).
 * Each index gets its own collection, so tests never see each other's points.
 */
export interface QdrantTarget {
  url: string;
  apiKey?: string;
  /** Schema violations seen so far (always empty for a real server). */
  violations(): string[];
}

export const silentLog = pino({ level: 'silent' });

export function uniqueCollection(): string {
  return `kilde_t_${randomUUID().slice(0, 8)}`;
}

export function settingsFor(
  target: QdrantTarget,
  extra: Partial<IndexSettings> & { collection: string },
): IndexSettings {
  return {
    uri: target.url,
    ...(target.apiKey ? { apiKey: target.apiKey } : {}),
    sparse: true,
    timeoutMs: 10_000,
    ...extra,
  };
}

export function openQdrant(
  target: QdrantTarget,
  extra: Partial<IndexSettings> & { collection: string },
  deps: Partial<QdrantDeps> = {},
): VectorIndex {
  return createQdrantIndex(settingsFor(target, extra), { log: silentLog, ...deps });
}

/** Raw REST call for test set-up and clean-up (collections the adapter would refuse to create). */
export async function rawQdrant(
  target: QdrantTarget,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.apiKey) headers['api-key'] = target.apiKey;
  const res = await fetch(target.url + path, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: await res.json().catch(() => undefined) };
}
