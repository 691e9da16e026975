import { z } from 'zod';
import { pointId } from './contract.js';
import { LEDGER_TYPE, RESERVED_TENANTS } from './reserved.js';
import type { VectorIndex } from './store.js';

/**
 * Settings that belong to the index, not to the process that opens it (docs/operations.md,
 * "Settings recorded in the index"): how many retired versions it keeps, and the embedding model
 * and size its vectors were made with. They live in one entry of the reserved `settings` tenant
 * (both engines: LanceDB and Qdrant hold it like a ledger entry), so a local `kilde` command
 * opening a server's index acts on it as the server does.
 */
export const recordedSettingsSchema = z.object({
  keep_versions: z.number().int().min(0).optional(),
  /** null: written lexical-only (no dense vectors). */
  embedding: z.object({ model: z.string(), dim: z.number().int() }).nullable().optional(),
  /** When the entry was last written (ms since the epoch). */
  at: z.number().optional(),
});
export type RecordedSettings = z.infer<typeof recordedSettingsSchema>;

const FILE = '\u0001kilde';
const ID = pointId(FILE, '\u0001settings', 0);

/** The index's recorded settings; `{}` when none are recorded (an index made before them). */
export async function readRecordedSettings(index: VectorIndex): Promise<RecordedSettings> {
  const page = await index.scroll({ reserved: 'settings' }, { limit: 1 });
  const parsed = recordedSettingsSchema.safeParse(page.points[0]?.meta.kilde_settings);
  return parsed.success ? parsed.data : {};
}

export async function writeRecordedSettings(index: VectorIndex, settings: RecordedSettings): Promise<void> {
  await index.upsert([
    {
      id: ID,
      content: '',
      meta: {
        collection_name: RESERVED_TENANTS.settings,
        collection_type: LEDGER_TYPE,
        file_id: FILE,
        ingest_version: 'settings',
        split_id: 0,
        kilde_settings: settings,
      },
    },
  ]);
}
