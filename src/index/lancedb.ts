import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Connection, connect, type Table } from '@lancedb/lancedb';
import type { Logger } from 'pino';
import { systemClock } from '../clock.js';
import { ConfigError } from '../config/parse.js';
import { DENSE_VECTOR, type IndexFilter, type IndexPoint, type SearchHit } from './contract.js';
import { lastById } from './lancedb-batch.js';
import { defaultCacheMb, type LanceCacheMb } from './lancedb-cache.js';
import { CommitJournal, type CommitRows } from './lancedb-journal.js';
import { TableMaintenance } from './lancedb-maintenance.js';
import { filesOf, moveRows, whereAny } from './lancedb-move.js';
import { DEFAULT_COMMIT_WINDOW_MS, keepVersionsMs, type LanceIndexOptions } from './lancedb-options.js';
import { PresenceProbe } from './lancedb-presence.js';
import {
  denseSizeOf,
  type LanceRow,
  type LexicalLayout,
  lanceSchema,
  lexicalLayoutOf,
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
import { fuseRrf } from './rrf.js';
import {
  type CollectionInfo,
  filterList,
  type HybridQuery,
  hybridBranchLimit,
  type Presence,
  type PresenceQuery,
  type ScrollOptions,
  type ScrollPage,
  type TenantCount,
  type UpsertOptions,
  type VectorIndex,
} from './store.js';

export { keepVersionsMs, type LanceIndexOptions } from './lancedb-options.js';

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
  readonly atomicUpsert = true;
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
  /** Whether a file has chunks in a collection (`presence`): concurrent questions share one read. */
  private readonly probe: PresenceProbe;
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
    this.probe = new PresenceProbe(this.exec);
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

  /**
   * One call is one merge-insert, one commit (group-committed with concurrent calls, lancedb-batch.ts):
   * its points appear together. `append` (every id new to the table) appends instead of merging by
   * id (at 100k rows 8.7 against 29 ms a commit); the rows of one file are then journaled (one
   * line, all or nothing) and committed with their window's others (lancedb-journal.ts).
   */
  async upsert(given: readonly IndexPoint[], options: UpsertOptions = {}): Promise<void> {
    options.signal?.throwIfAborted();
    const points = options.withEach ? [...given, options.withEach()] : given;
    if (points.length === 0) return;
    const fileId = points[0]!.meta.file_id;
    if (options.append === true && this.journal.enabled && points.every((p) => p.meta.file_id === fileId)) {
      await this.rawTable();
      const rows = lastById(points).map((p) => pointToRow(p, this.denseDim, this.layout));
      this.writer.known.note([fileId]);
      await this.journal.add(fileId, rows, this.commitJournaled);
      this.writer.epoch += 1;
      return;
    }
    const table = await this.requireTable(points.map((p) => p.meta.file_id));
    const unique = lastById(points);
    const rows = unique.map((p) => pointToRow(p, this.denseDim, this.layout));
    const schema = lanceSchema(this.denseDim, this.layout);
    const outcome = await this.writer.batcher.upsert(table, schema, rows, this.exec, {
      append: options.append === true && unique.length === points.length,
    });
    this.writer.epoch += 1;
    this.maintenance.wrote(table, outcome);
  }

  /**
   * Rows of this file still journaled are committed first, so the read sees them; other files'
   * journaled rows cannot change its answer. Concurrent questions share one read (lancedb-presence.ts).
   */
  async presence(q: PresenceQuery): Promise<Presence> {
    const table = await this.rawTable();
    // A file the table has never held, asked under this process's own lock: nothing to read.
    if (q.exclusive === true && !(await this.writer.known.mayHold(table, q.fileId))) {
      return { chunks: false, id: false };
    }
    if (this.journal.pending(q.fileId)) await this.journal.flush();
    const found = await this.probe.has(table, q.fileId, q.collectionName, q.id);
    return { chunks: found.chunks, id: found.committed };
  }

  async deleteWhere(filter: IndexFilter | readonly IndexFilter[]): Promise<number> {
    const filters = filterList(filter);
    const where = whereAny(filters);
    if (where === 'false') return 0;
    const fileIds = new Set(filters.map((f) => f.fileId));
    const fileId = fileIds.size === 1 ? [...fileIds][0] : undefined;
    const table = await this.requireTable(filesOf(filters));
    const outcome = await this.writer.batcher.delete(table, where, fileId);
    this.writer.epoch += 1;
    this.maintenance.wrote(table, { commits: outcome.commits, rows: 0 });
    return outcome.rows;
  }

  async count(filter: IndexFilter | readonly IndexFilter[]): Promise<number> {
    const filters = filterList(filter);
    const where = whereAny(filters);
    if (where === 'false') return 0;
    const table = await this.requireTable(filesOf(filters));
    return where === 'true' ? table.countRows() : table.countRows(where);
  }

  async moveTo(filter: IndexFilter | readonly IndexFilter[], collectionName: string): Promise<number> {
    const filters = filterList(filter);
    const table = await this.requireTable(filesOf(filters));
    const { writer, maintenance, exec, denseDim, layout } = this;
    return moveRows({ writer, maintenance, exec, denseDim, layout }, table, filters, collectionName);
  }

  /** One column scan of the chunks' tenant key (the embedded index is one machine's corpus). */
  async tenants(limit: number): Promise<TenantCount[]> {
    const table = await this.openExisting();
    if (!table) return [];
    await this.requireTable();
    return tenantCounts(table, limit, this.exec);
  }

  async scroll(filter: IndexFilter, options: ScrollOptions): Promise<ScrollPage> {
    if (!filter.fileIds || filter.fileIds.length === 0) {
      return scrollPage(() => this.requireTable(filesOf([filter])), filter, options, this.exec);
    }
    // Only the ids the table may hold are read (lancedb-known.ts); none of them: no query at all.
    const table = await this.requireTable(filter.fileIds);
    const fileIds = await this.writer.known.mayHoldOf(table, filter.fileIds);
    return scrollPage(async () => table, { ...filter, fileIds }, options, this.exec);
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
