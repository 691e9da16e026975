import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { MODEL_REGISTRY, type ModelEntry } from './registry.js';

/** The file an install writes last into a model's directory: what it is and where it came from. */
export const MANIFEST = 'kilde-model.json';

/** Where `kilde models install` puts models and `npm start` looks for them. */
export function modelsDir(dataDir: string): string {
  return join(dataDir, 'models');
}

const manifestSchema = z.object({
  name: z.string(),
  model: z.string(),
  dim: z.number().int().positive(),
  languages: z.array(z.string()),
  licence: z.string(),
  prefixes: z.object({ doc: z.string(), query: z.string() }),
  maxTokens: z.number().int().positive(),
  installedAt: z.string(),
  bytes: z.number().int().nonnegative(),
  sources: z.array(
    z.object({
      project: z.string(),
      version: z.string(),
      filename: z.string(),
      sha256: z.string(),
      licence: z.string(),
    }),
  ),
});
export type ModelManifest = z.infer<typeof manifestSchema>;

export interface InstalledModel extends ModelManifest {
  /** The model directory (EMBEDDING_MODEL of the in-process provider). */
  dir: string;
}

/** The manifest an install of `entry` writes. */
export function manifestOf(entry: ModelEntry, bytes: number, installedAt: Date): ModelManifest {
  return {
    name: entry.name,
    model: entry.model,
    dim: entry.dim,
    languages: [...entry.languages],
    licence: entry.licence,
    prefixes: { ...entry.prefixes },
    maxTokens: entry.maxTokens,
    installedAt: installedAt.toISOString(),
    bytes,
    sources: entry.sources.map((s) => ({
      project: s.project,
      version: s.version,
      filename: s.filename,
      sha256: s.sha256,
      licence: s.licence,
    })),
  };
}

/**
 * The installed models under `root`: every directory holding a readable manifest. An install
 * renames its directory into place only when complete, so a half-done one (`.staging-…`) never
 * shows; a directory without a valid manifest is not a Kilde install and is left out.
 */
export async function listInstalled(root: string): Promise<InstalledModel[]> {
  const names = await readdir(root).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as string[];
    throw err;
  });
  const found: InstalledModel[] = [];
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    const dir = join(root, name);
    const text = await readFile(join(dir, MANIFEST), 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      continue;
    }
    const parsed = manifestSchema.safeParse(json);
    if (parsed.success) found.push({ ...parsed.data, dir });
  }
  return found;
}

/** The model `npm start` uses: the first installed in the registry's order, else the first by name. */
export async function preferredModel(
  dataDir: string,
  registry: readonly ModelEntry[] = MODEL_REGISTRY,
): Promise<InstalledModel | undefined> {
  const installed = await listInstalled(modelsDir(dataDir));
  const rank = (m: InstalledModel) => {
    const i = registry.findIndex((e) => e.name === m.name);
    return i < 0 ? registry.length : i;
  };
  return installed.sort((a, b) => rank(a) - rank(b))[0];
}
