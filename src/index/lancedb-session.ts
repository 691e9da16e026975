import { Session } from '@lancedb/lancedb';
import { type LanceCacheMb, trackCache } from './lancedb-cache.js';

/**
 * LanceDB's session: the caches of index data and table metadata a connection reads through. Left
 * to LanceDB, each connection gets caches of 6 GiB (index) and 1 GiB (metadata) that nothing
 * outgrows in practice, and every commit or optimize adds entries for its new table version and
 * index files that no later read uses. A server that ingests steadily therefore grew without end
 * (docs/performance.md, "LanceDB's caches"). Kilde gives every connection of the process one session
 * with bounded caches, so ingest and retrieve in one process (`serve all`) share one budget.
 */
const MIB = 1024 * 1024;
const sessions = new Map<string, Session>();

/** The process's session for these bounds: made once, then shared by every connection asking for them. */
export function sessionFor(cache: LanceCacheMb): Session {
  const key = `${cache.index}/${cache.metadata}`;
  let session = sessions.get(key);
  if (!session) {
    session = new Session(BigInt(Math.round(cache.index * MIB)), BigInt(Math.round(cache.metadata * MIB)));
    sessions.set(key, session);
    trackCache(session);
  }
  return session;
}
