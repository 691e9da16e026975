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
  counts: { n: Counts; us: Counts };
}
export interface QdrantCost {
  /** CPU seconds of the Qdrant process over the run. */
  cpu: number;
  /** Requests by `METHOD /path template`, and their sum. */
  requests: Counts;
  total: number;
  /** Milliseconds Qdrant took to answer them (its own timing, waits included), by the same key. */
  ms: Counts;
}

async function counts(url: string): Promise<{ n: Counts; us: Counts }> {
  const res = await fetch(`${url}/telemetry?details_level=1`, { headers: { connection: 'close' } });
  const body = (await res.json()) as {
    result: {
      requests: {
        rest: {
          responses: Record<string, Record<string, { count: number; total_duration_micros?: number }>>;
        };
      };
    };
  };
  const n: Counts = {};
  const us: Counts = {};
  for (const [endpoint, byStatus] of Object.entries(body.result.requests.rest.responses)) {
    if (endpoint.includes('/telemetry')) continue;
    n[endpoint] = Object.values(byStatus).reduce((sum, s) => sum + s.count, 0);
    us[endpoint] = Object.values(byStatus).reduce((sum, s) => sum + (s.total_duration_micros ?? 0), 0);
  }
  return { n, us };
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
  const ms: Counts = {};
  let total = 0;
  for (const [endpoint, n] of Object.entries(now.n)) {
    const d = n - (mark.counts.n[endpoint] ?? 0);
    if (d > 0) {
      requests[endpoint] = d;
      ms[endpoint] = ((now.us[endpoint] ?? 0) - (mark.counts.us[endpoint] ?? 0)) / 1000;
      total += d;
    }
  }
  return { cpu: (cpuMs - mark.cpuMs) / 1000, requests, total, ms };
}

/** The short name of a request kind: the last word of its path (`PUT …/points` is `upsert`). */
function short(endpoint: string): string {
  const [method, path = ''] = endpoint.split(' ');
  if (method === 'PUT' && path.endsWith('/points')) return 'upsert';
  if (method === 'PUT' && path.endsWith('/index')) return 'create index';
  if (path === '/collections/{collection_name}')
    return method === 'PUT' ? 'create' : method === 'DELETE' ? 'drop' : 'info';
  return path.split('/').at(-1) ?? endpoint;
}

/**
 * `upsert 8 (1.00 a file, 120 ms), …`: the requests by kind, per file where `per` > 1, with the
 * milliseconds Qdrant took to answer them when `ms` is given.
 */
export function describeRequests(requests: Counts, per: number, ms?: Counts): string {
  const by = new Map<string, { n: number; ms: number }>();
  for (const [e, n] of Object.entries(requests)) {
    const k = by.get(short(e)) ?? { n: 0, ms: 0 };
    by.set(short(e), { n: k.n + n, ms: k.ms + (ms?.[e] ?? 0) });
  }
  return [...by]
    .sort((a, b) => b[1].n - a[1].n)
    .map(([k, v]) => {
      const notes = [
        ...(per > 1 ? [`${(v.n / per).toFixed(2)} a file`] : []),
        ...(ms ? [`${v.ms.toFixed(0)} ms`] : []),
      ];
      return `${k} ${v.n}${notes.length > 0 ? ` (${notes.join(', ')})` : ''}`;
    })
    .join(', ');
}
