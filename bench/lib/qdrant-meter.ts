import { cpuMsOf } from './proc-cpu.js';

/*
 * What one run cost a Qdrant server: its process's CPU (all threads) and the REST requests it
 * answered, by endpoint, read from Qdrant's own telemetry (`GET /telemetry`, whose counters are per
 * endpoint and status since the server started) at a mark and again after the run. The telemetry
 * reads themselves are left out of the counts.
 */

type Counts = Record<string, number>;
export interface QdrantMark {
  cpuMs: number;
  counts: Counts;
}
export interface QdrantCost {
  /** CPU seconds of the Qdrant process over the run. */
  cpu: number;
  /** Requests by `METHOD /path template`, and their sum. */
  requests: Counts;
  total: number;
}

async function counts(url: string): Promise<Counts> {
  const res = await fetch(`${url}/telemetry?details_level=1`, { headers: { connection: 'close' } });
  const body = (await res.json()) as {
    result: { requests: { rest: { responses: Record<string, Record<string, { count: number }>> } } };
  };
  const out: Counts = {};
  for (const [endpoint, byStatus] of Object.entries(body.result.requests.rest.responses)) {
    if (endpoint.includes('/telemetry')) continue;
    out[endpoint] = Object.values(byStatus).reduce((n, s) => n + s.count, 0);
  }
  return out;
}

export async function qdrantMark(url: string, pid: number | undefined): Promise<QdrantMark> {
  return { cpuMs: cpuMsOf(pid) ?? Number.NaN, counts: await counts(url) };
}

export async function qdrantSince(
  url: string,
  pid: number | undefined,
  mark: QdrantMark,
): Promise<QdrantCost> {
  const cpuMs = cpuMsOf(pid) ?? Number.NaN;
  const now = await counts(url);
  const requests: Counts = {};
  let total = 0;
  for (const [endpoint, n] of Object.entries(now)) {
    const d = n - (mark.counts[endpoint] ?? 0);
    if (d > 0) {
      requests[endpoint] = d;
      total += d;
    }
  }
  return { cpu: (cpuMs - mark.cpuMs) / 1000, requests, total };
}

/** `upsert 8, payload 2, ...`: the requests by the last word of their path (`PUT …/points` is `upsert`). */
export function describeRequests(requests: Counts, per: number): string {
  const short = (endpoint: string) => {
    const [method, path = ''] = endpoint.split(' ');
    if (method === 'PUT' && path.endsWith('/points')) return 'upsert';
    if (method === 'PUT' && path.endsWith('/index')) return 'create index';
    if (path === '/collections/{collection_name}')
      return method === 'PUT' ? 'create' : method === 'DELETE' ? 'drop' : 'info';
    return path.split('/').at(-1) ?? endpoint;
  };
  const by = new Map<string, number>();
  for (const [e, n] of Object.entries(requests)) by.set(short(e), (by.get(short(e)) ?? 0) + n);
  return [...by]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ${n}${per > 1 ? ` (${(n / per).toFixed(2)} a file)` : ''}`)
    .join(', ');
}
