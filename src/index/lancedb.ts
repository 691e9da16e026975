import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Connection, connect, type Table } from '@lancedb/lancedb';
import type { Logger } from 'pino';
import { systemClock } from '../clock.js';
import { ConfigError } from '../config/parse.js';
import { DENSE_VECTOR, type IndexFilter, type IndexPoint, type SearchHit } from './contract.js';
import { lastById } from './lancedb-batch.js';
import { defaultCacheMb, type LanceCacheMb } from './lancedb-cache.js';
import { filterToSql, sqlString } from './lancedb-filter.js';
import { CommitJournal, type CommitRows } from './lancedb-journal.js';
import { TableMaintenance } from './lancedb-maintenance.js';
import { DEFAULT_COMMIT_WINDOW_MS, keepVersionsMs, type LanceIndexOptions } from './lancedb-options.js';
import { PresenceProbe } from './lancedb-presence.js';
import {
  denseSizeOf,
  type LanceRow,
  type LexicalLayout,
  lanceSchema,
  lexicalLayoutOf,
  movedRow,
  pointToRow,
} from './lancedb-rows.js';
import { scrollPage, tenantCounts } from './lancedb-scan.js';
import {
  ensureIndexes,
  type FtsLanguage,
  fallbackLanguages,
  hasFtsIndex,
  openOrCreateTable,
  useDenseColumn,
} from './lancedb-schema-check.js';
import { searchDense, searchLexical, type TableReader } from './lancedb-search.js';
import { sessionFor } from './lancedb-session.js';
import { DEFAULT_VECTOR_INDEX, DenseKindCache, type VectorIndexSettings } from './lancedb-vector-index.js';
import { acquireWriter, releaseWriter, type TableWriter } from './lancedb-writer.js';
import type { IndexSettings } from './open.js';
import { RESERVED_TENANTS } from './reserved.js';
import { fuseRrf } from './rrf.js';
import {
  type CollectionInfo,
  filterList,
  type HybridQuery,
  hybridBranchLimit,
  type ScrollPage,
  type StagedBatch,
  type TenantCount,
  type VectorIndex,
  type VersionWrite,
} from './store.js';

export { keepVersionsMs, type LanceIndexOptions } from './lancedb-options.js';

/** Every file_id the filters confine an operation to; undefined when one of them names none. */
function filesOf(filters: readonly IndexFilter[]): string[] | undefined {
  const files: string[] = [];
  for (const f of filters) {
    if (f.fileId === undefined && f.fileIds === undefined) return undefined;
    if (f.fileId !== undefined) files.push(f.fileId);
    else files.push(...(f.fileIds ?? []));
  }
  return files;
}

/** The embedded `VectorIndex`: one LanceDB table in a local directory. */
export async function createLanceIndex(
  settings: IndexSettings,
  deps: { log: Logger },
  options: LanceIndexOptions = {},
): Promise<VectorIndex> {
  const directory = resolve(settings.uri);
  // LanceDB would fail on first use with a debug dump of its Rust error; a file here is a setting's mistake.
  const found = await stat(directory).catch(() => undefined);
  if (found && !found.isDirectory()) {
    throw new ConfigError(
      `Configuration error: VECTORDB_URI ${directory} is a file, not a directory: point VECTORDB_URI (or KILDE_DATA_DIR) at a folder for the index`,
    );
  }
  const cacheMb = settings.cacheMb ?? defaultCacheMb(settings.denseDim !== undefined);
  const db = await connect(directory, {
    readConsistencyInterval: options.readConsistencySeconds ?? 1,
    session: sessionFor(cacheMb),
  });
  return new LanceIndex(db, directory, { ...settings, cacheMb }, deps.log, options);
}

class LanceIndex implements VectorIndex {
  readonly engine = 'lancedb' as const;
  private table: Table | undefined;
  /** The open table's lexical layout (read with its schema when the table is opened). */
  private layout: LexicalLayout = 'terms';
  private fts = false;
  /** Whether the open table's full-text index holds rows (see `searchLexical`, lancedb-search.ts). */
  private readonly ftsState = { populated: false };
  /** Which dense index the table has (another process may build or replace it), as last looked up. */
  private readonly denseKind: DenseKindCache;
  private readonly writer: TableWriter;
  private readonly name: string;
  private readonly denseDim: number | undefined;
  private readonly language: FtsLanguage;
  private readonly exec: { timeoutMs: number };
  private readonly vectorIndex: VectorIndexSettings;
  /** Whether a file has chunks in a collection, for `writeVersion`: concurrent questions share one read. */
  private readonly presence: PresenceProbe;
  private closed = false;
  private readonly maintenance: TableMaintenance;
  /** New files' versions waiting for their window's commit (lancedb-journal.ts), shared per table. */
  private readonly journal: CommitJournal;

  constructor(
    private readonly db: Connection,
    private readonly directory: string,
    settings: IndexSettings & { cacheMb: LanceCacheMb },
    private readonly log: Logger,
    readonly options: LanceIndexOptions,
  ) {
    this.name = settings.collection;
    this.denseDim = settings.denseDim;
    this.language = settings.language ?? 'english';
    this.exec = { timeoutMs: settings.timeoutMs };
    this.presence = new PresenceProbe(this.exec);
    this.vectorIndex = { ...DEFAULT_VECTOR_INDEX, ...settings.vectorIndex };
    this.denseKind = new DenseKindCache(options.clock ?? systemClock);
    this.writer = acquireWriter(directory, settings.collection, options.batchSize ?? 2000);
    this.maintenance = new TableMaintenance({
      writer: this.writer,
      name: this.name,
      log: this.log,
      options,
      denseDim: this.denseDim,
      vectorIndex: this.vectorIndex,
      indexCacheMb: settings.cacheMb.index,
      keepVersionsMs: options.cleanupOlderThanMs ?? keepVersionsMs(settings.timeoutMs),
      closed: () => this.closed,
    });
    this.writer.journal ??= new CommitJournal({
      dir: join(directory, `${settings.collection}.kilde-journal`),
      windowMs: options.commitWindowMs ?? DEFAULT_COMMIT_WINDOW_MS,
      maxRows: options.batchSize ?? 2000,
      clock: options.clock ?? systemClock,
      log,
    });
    this.journal = this.writer.journal;
  }

  /** Appends a window's journaled rows in one commit (a retry merges by id: the append may have landed). */
  private readonly commitJournaled: CommitRows = async (rows: LanceRow[], retry: boolean) => {
    const table = await this.openExisting();
    if (!table) throw new Error(`LanceDB table "${this.name}" does not exist in ${this.directory}`);
    const schema = lanceSchema(this.denseDim, this.layout);
    const outcome = await this.writer.batcher.upsert(table, schema, rows, this.exec, { append: !retry });
    this.writer.epoch += 1;
    this.maintenance.wrote(table, outcome);
  };

  /** Once per process and table, before its first read or write: ended processes' journaled files. */
  private recover(): Promise<void> {
    this.writer.recovered ??= this.journal.recover(this.commitJournaled).then(() => undefined);
    return this.writer.recovered;
  }

  async ensureCollection(): Promise<void> {
    // Through the writer queue: table and index creation are writes too.
    await this.writer.queue.run(async () => {
      const table = await openOrCreateTable(this.db, this.name, this.denseDim, this.directory, this.log);
      await ensureIndexes(table, this.language, this.log);
      this.layout = lexicalLayoutOf(await table.schema());
      this.table = table;
    });
    await this.recover();
    this.fts = true;
    this.writer.epoch += 1;
    this.log.debug({ table: this.name, directory: this.directory }, 'lancedb table ready');
  }

  async describe(): Promise<CollectionInfo> {
    const table = await this.openExisting();
    if (!table) {
      this.fts = false;
      return { exists: false, hasSparse: false, vectorNames: [] };
    }
    const denseSize = denseSizeOf(await table.schema());
    this.fts = await hasFtsIndex(table);
    const fallbacks = await fallbackLanguages(table);
    return {
      exists: true,
      ...(denseSize === undefined ? {} : { denseSize }),
      hasSparse: this.fts,
      vectorNames: denseSize === undefined ? [] : [DENSE_VECTOR],
      ...(fallbacks.length > 0 ? { fallbackLanguages: fallbacks } : {}),
    };
  }

  hasSparse(): boolean {
    return this.fts;
  }

  /** `append`: every id is new to the table (see `writeVersion`); else (the default) a merge by id. */
  async upsert(points: readonly IndexPoint[], options: { append?: boolean } = {}): Promise<void> {
    const append = options.append === true;
    if (points.length === 0) return;
    const table = await this.requireTable(points.map((p) => p.meta.file_id));
    const unique = lastById(points);
    const rows = unique.map((p) => pointToRow(p, this.denseDim, this.layout));
    const schema = lanceSchema(this.denseDim, this.layout);
    const outcome = await this.writer.batcher.upsert(table, schema, rows, this.exec, {
      append: append && unique.length === points.length,
    });
    this.writer.epoch += 1;
    this.maintenance.wrote(table, outcome);
  }

  /**
   * One upsert call is one merge-insert, one commit: points and ledger entries appear together. A
   * file with no other version in the collection needs no `writing` entry: its one commit is all
   * or nothing, and nothing is left to retire (the caller holds the file's lock). A file with no row
   * at all yet (no chunk in the collection and no `committed` entry, whose id is fixed per file and
   * collection), written under a lock no other process shares (`exclusive`), is appended: its ids
   * are all new (the version id is fresh), and an append commit does not read the table's ids as a
   * merge does (at 100k rows 8.7 against 29 ms a commit).
   *
   * A version streamed in batches (`staged` > 0) was written under the staging tenant; its last
   * batch is staged too, then one update (one commit) moves every staged point of the version into
   * its collection, its `meta` JSON with it. The count is checked before `committed` is written.
   */
  async writeVersion(v: VersionWrite): Promise<{ writing: boolean }> {
    v.signal?.throwIfAborted();
    const staged = v.staged ?? 0;
    if (staged > 0) {
      await this.stageVersion({ ...v, points: v.points });
      v.signal?.throwIfAborted();
      await this.publishStaged(v.fileId, v.version, v.collectionName);
      const total = staged + v.points.length;
      const visible = await this.count({
        fileId: v.fileId,
        ingestVersion: v.version,
        collectionNames: [v.collectionName],
      });
      if (visible !== total) {
        throw new Error(
          `version ${v.version} of ${v.fileId} has ${visible} of its ${total} points after publishing`,
        );
      }
      await this.upsert([v.committed]);
      return { writing: true };
    }
    // The versions written in one pass (or by concurrent requests) ask together: one read, and their
    // upserts below are group-committed into one merge-insert (lancedb-batch.ts).
    // Rows of this file still journaled are committed first, so the presence read sees them; other
    // files' journaled rows cannot change its answer.
    const table = await this.rawTable();
    if (this.journal.pending(v.fileId)) await this.journal.flush();
    const found = await this.presence.has(table, v.fileId, v.collectionName, v.committed.id);
    v.signal?.throwIfAborted();
    const others = found.chunks;
    const append = v.exclusive === true && !found.chunks && !found.committed;
    if (append && this.journal.enabled) {
      // A new file: journaled (one line, all or nothing) and committed with its window's others.
      const rows = lastById([...v.points, v.committed]).map((p) => pointToRow(p, this.denseDim, this.layout));
      await this.journal.add(v.fileId, rows, this.commitJournaled);
      this.writer.epoch += 1;
      return { writing: false };
    }
    await this.upsert([...v.points, ...(others ? [v.writing()] : []), v.committed], { append });
    return { writing: others };
  }

  async stageVersion(b: StagedBatch): Promise<void> {
    b.signal?.throwIfAborted();
    const staging = RESERVED_TENANTS.staging;
    await this.upsert([
      ...b.points.map((p) => ({ ...p, meta: { ...p.meta, collection_name: staging } })),
      b.writing(),
    ]);
  }

  /** One commit: every staged point of the version moves into its collection (column and meta JSON). */
  private async publishStaged(fileId: string, version: string, collectionName: string): Promise<void> {
    const table = await this.requireTable([fileId]);
    const staging = RESERVED_TENANTS.staging;
    const where = filterToSql({ fileId, ingestVersion: version, reserved: 'staging' });
    const from = `"collection_name":${JSON.stringify(staging)}`;
    const to = `"collection_name":${JSON.stringify(collectionName)}`;
    const result = await this.writer.queue.run(() =>
      table.update({
        where: where ?? 'false',
        valuesSql: {
          collection_name: sqlString(collectionName),
          meta: `replace(meta, ${sqlString(from)}, ${sqlString(to)})`,
        },
      }),
    );
    this.maintenance.wrote(table, { commits: 1, rows: result.rowsUpdated });
  }

  async deleteWhere(filter: IndexFilter | readonly IndexFilter[]): Promise<number> {
    const filters = filterList(filter);
    const predicates = filters.map((f) => filterToSql(f) ?? 'true').filter((p) => p !== 'false');
    if (predicates.length === 0) return 0;
    const where = predicates.length === 1 ? predicates[0]! : predicates.map((p) => `(${p})`).join(' OR ');
    const fileIds = new Set(filters.map((f) => f.fileId));
    const fileId = fileIds.size === 1 ? [...fileIds][0] : undefined;
    const table = await this.requireTable(filesOf(filters));
    const outcome = await this.writer.batcher.delete(table, where, fileId);
    this.writer.epoch += 1;
    this.maintenance.wrote(table, { commits: outcome.commits, rows: 0 });
    return outcome.rows;
  }

  async count(filter: IndexFilter): Promise<number> {
    const where = filterToSql(filter);
    if (where === 'false') return 0;
    const table = await this.requireTable(filesOf([filter]));
    return where === undefined ? table.countRows() : table.countRows(where);
  }

  /**
   * Reads the matching rows whole (vectors and lexical terms included) and merges them back under
   * the new tenant: one merge-insert by id, so one commit moves them all.
   */
  async moveTo(filter: IndexFilter, collectionName: string): Promise<number> {
    const where = filterToSql(filter);
    if (where === undefined) throw new Error('refusing to move every point: moveTo needs a filter');
    if (where === 'false') return 0;
    const table = await this.requireTable(filesOf([filter]));
    const raw: unknown[] = await table.query().where(where).toArray(this.exec);
    if (raw.length === 0) return 0;
    const rows = raw.map((r) => movedRow(r, collectionName));
    const schema = lanceSchema(this.denseDim, this.layout);
    const outcome = await this.writer.batcher.upsert(table, schema, rows, this.exec);
    this.maintenance.wrote(table, outcome);
    return rows.length;
  }

  /** One column scan of the chunks' tenant key (the embedded index is one machine's corpus). */
  async tenants(limit: number): Promise<TenantCount[]> {
    const table = await this.openExisting();
    if (!table) return [];
    await this.requireTable();
    return tenantCounts(table, limit, this.exec);
  }

  async scroll(filter: IndexFilter, options: { limit: number; cursor?: string }): Promise<ScrollPage> {
    return scrollPage(() => this.requireTable(filesOf([filter])), filter, options, this.exec);
  }

  async searchDense(vector: number[], filter: IndexFilter, limit: number): Promise<SearchHit[]> {
    return searchDense(this.reader(), vector, filter, limit);
  }

  async searchLexical(query: HybridQuery, filter: IndexFilter, limit: number): Promise<SearchHit[]> {
    return searchLexical(this.reader(), query, filter, limit);
  }

  async searchHybrid(query: HybridQuery, filter: IndexFilter, limit: number): Promise<SearchHit[]> {
    const n = hybridBranchLimit(limit);
    const lexical = this.searchLexical(query, filter, n);
    // Without a dense side only the lexical list is fused (and normalised as one list).
    if (query.dense === undefined || this.denseDim === undefined) return fuseRrf([await lexical], limit);
    const [denseHits, lexicalHits] = await Promise.all([this.searchDense(query.dense, filter, n), lexical]);
    return fuseRrf([denseHits, lexicalHits], limit);
  }

  /** What the searches read (lancedb-search.ts). */
  private reader(): TableReader {
    return {
      name: this.name,
      denseDim: this.denseDim,
      layout: this.layout,
      exec: this.exec,
      vectorIndex: this.vectorIndex,
      fts: this.ftsState,
      table: () => this.requireTable(),
      quantized: (table) => this.denseKind.quantized(table),
    };
  }

  writeEpoch(): number {
    return this.writer.epoch;
  }

  async ping(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const names = await this.db.tableNames();
    signal?.throwIfAborted();
    if (!names.includes(this.name)) {
      throw new Error(`LanceDB table "${this.name}" does not exist in ${this.directory}`);
    }
  }

  async settle(): Promise<boolean> {
    if (this.closed) return false;
    if (!this.journal.empty) await this.journal.flush();
    const table = this.table ?? (await this.openExisting());
    return table ? this.maintenance.settle(table) : false;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.journal
      .close()
      .catch((err: unknown) =>
        this.log.error(
          { err, table: this.name },
          'journaled new files not committed at close; the next start replays them',
        ),
      );
    await this.writer.queue.idle();
    await this.writer.vectorBuild;
    releaseWriter(this.directory, this.name);
    this.table?.close();
    this.db.close();
  }

  private async openExisting(): Promise<Table | undefined> {
    if (this.table) return this.table;
    if (!(await this.db.tableNames()).includes(this.name)) return undefined;
    const table = await this.db.openTable(this.name);
    await useDenseColumn(table, this.log);
    this.layout = lexicalLayoutOf(await table.schema());
    this.table = table;
    await this.recover();
    return table;
  }

  /**
   * The table, for a read or a write: what the journal holds is committed first, so every read in
   * this process sees every version it acknowledged, and every other write lands after them. With
   * `files` (every file_id the operation can touch) only a journal holding one of them is flushed:
   * the others' rows can neither answer nor be changed by it.
   */
  private async requireTable(files?: Iterable<string>): Promise<Table> {
    const table = await this.rawTable();
    await this.writer.recovered;
    if (this.journal.empty) return table;
    if (files === undefined || [...new Set(files)].some((f) => this.journal.pending(f))) {
      await this.journal.flush();
    }
    return table;
  }

  /** The table as it is, the journal left as it is (the journal's own commit, the presence read). */
  private async rawTable(): Promise<Table> {
    const table = await this.openExisting();
    if (!table) {
      throw new Error(
        `LanceDB table "${this.name}" does not exist in ${this.directory}; call ensureCollection()`,
      );
    }
    return table;
  }
}
