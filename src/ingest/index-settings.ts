import { basename } from 'node:path';
import type { Logger } from 'pino';
import { KildeError } from '../errors.js';
import {
  type RecordedSettings,
  readRecordedSettings,
  writeRecordedSettings,
} from '../index/recorded-settings.js';
import type { VectorIndex } from '../index/store.js';

/** What an ingesting process brings to an index (its configuration). */
export interface OwnIndexSettings {
  /** `KEEP_VERSIONS` as set; undefined: not set (the index's value, else 0). */
  keepVersions: number | undefined;
  /** The dense model and size; null: lexical-only. */
  embedding: { model: string; dim: number } | null;
  /** `INDEX_SETTINGS_UPDATE`: an explicit value replaces the recorded one instead of refusing. */
  update: boolean;
  now: () => number;
}

/** What the process runs with. */
export interface Reconciled {
  keepVersions: number;
}

function conflict(what: string, fix = "Unset it to use the index's value"): KildeError {
  return new KildeError(
    'INDEX_SETTINGS_CONFLICT',
    `${what}. ${fix}, or set INDEX_SETTINGS_UPDATE=true to record this one`,
  );
}

/**
 * Honours the settings recorded in the index (src/index/recorded-settings.ts) and records the ones
 * this process sets that the index does not know yet. A value this process sets explicitly that
 * contradicts the recorded one refuses to start (`INDEX_SETTINGS_CONFLICT`) unless `update`; an
 * unset `KEEP_VERSIONS` takes the index's. The embedding is compared, never adopted: a model
 * cannot be borrowed from the index.
 */
export async function reconcileIndexSettings(
  index: VectorIndex,
  own: OwnIndexSettings,
  log: Logger,
): Promise<Reconciled> {
  const recorded = await readRecordedSettings(index);
  const next: RecordedSettings = { ...recorded };
  let changed = false;

  if (own.keepVersions !== undefined && own.keepVersions !== recorded.keep_versions) {
    if (recorded.keep_versions !== undefined && !own.update) {
      throw conflict(
        `KEEP_VERSIONS=${own.keepVersions} contradicts the index, which records KEEP_VERSIONS=${recorded.keep_versions} (retired versions it keeps per file; a smaller value would delete kept versions)`,
      );
    }
    next.keep_versions = own.keepVersions;
    changed = true;
  }

  const model = (e: RecordedSettings['embedding']) =>
    e ? `${e.model} (${e.dim} dimensions)` : 'none (lexical-only)';
  if (recorded.embedding !== undefined) {
    const same =
      recorded.embedding === null
        ? own.embedding === null
        : own.embedding !== null &&
          own.embedding.dim === recorded.embedding.dim &&
          sameModel(own.embedding.model, recorded.embedding.model);
    if (!same && recorded.embedding !== null) {
      if (!own.update) {
        throw conflict(
          `The embedding ${model(own.embedding)} contradicts the index, whose vectors were made with ${model(recorded.embedding)} (EMBEDDING_PROVIDER, EMBEDDING_MODEL, EMBEDDING_DIM)`,
          'Set the EMBEDDING_* variables of the process that wrote it',
        );
      }
    }
    if (!same) {
      next.embedding = own.embedding;
      changed = true;
    }
  } else {
    next.embedding = own.embedding;
    changed = true;
  }

  if (changed) {
    next.at = own.now();
    await writeRecordedSettings(index, next);
    log.info({ recorded: next }, 'recorded the index settings');
  }
  const keepVersions = own.keepVersions ?? recorded.keep_versions ?? 0;
  if (own.keepVersions === undefined && recorded.keep_versions !== undefined) {
    log.info({ keepVersions }, "KEEP_VERSIONS unset: using the index's recorded value");
  }
  return { keepVersions };
}

/**
 * Whether two recorded model names are the same model: equal, unknown on one side, or the same
 * model directory moved (an in-process model is named by its folder, and `~/.kilde` may move).
 */
function sameModel(a: string, b: string): boolean {
  if (a === b || a === '' || b === '') return true;
  const path = (m: string) => m.startsWith('/') || /^[A-Za-z]:[\\/]/.test(m);
  return path(a) && path(b) && basename(a) === basename(b);
}
