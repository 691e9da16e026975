import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as lancedb from '@lancedb/lancedb';

/**
 * How many table versions LanceDB made under `dir`: every table (a `<name>.lance` directory, at any
 * depth) is opened read-only and its current version read; each commit (an append, a delete, a
 * merge-insert, an index build, a compaction) makes one, and old ones may already be cleaned up, so
 * the version number counts them where counting the manifests left on disk would not.
 */
export async function lanceVersions(dir: string): Promise<{ tables: number; versions: number }> {
  const parents = new Set<string>();
  const walk = (d: string) => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      if (e.name.endsWith('.lance')) parents.add(d);
      else walk(join(d, e.name));
    }
  };
  walk(dir);
  let tables = 0;
  let versions = 0;
  for (const parent of parents) {
    const db = await lancedb.connect(parent);
    for (const name of await db.tableNames()) {
      const table = await db.openTable(name);
      versions += await table.version();
      tables += 1;
      table.close();
    }
    db.close();
  }
  return { tables, versions };
}
