/**
 * Reserved tenants: `meta.collection_name` values that hold Kilde's own bookkeeping beside the chunks
 * in the one physical collection (docs/decisions-index.md, "Crash-consistent versions").
 *
 * - `staging`: the points of a version still being written (Qdrant). A reader filtering on its
 *   collection names, Kilde's or the reference retrieval service's, never matches them.
 * - `writing`: one ledger entry per version being written; an entry left behind by a crash tells
 *   the sweep which version to finish or remove.
 * - `committed`: one ledger entry per (collection, file): the version that is committed.
 * - `kept`: the chunks of retired versions kept for a restore (`KEEP_VERSIONS`): out of every
 *   tenant's space, so no search (Kilde's or the reference service's) can return them.
 * - `retired`: one ledger entry per kept version: the collection it came from, when it was written
 *   and retired, how many points it has.
 * - `settings`: one entry holding the settings that belong to the index (recorded-settings.ts).
 *
 * Each value starts with a control character, which ingestion refuses in every identifier, so no
 * caller can create or name them; the index adapters also drop them from a search's collection names.
 */
export const RESERVED_TENANTS = {
  staging: '\u0001kilde:staging',
  writing: '\u0001kilde:writing',
  committed: '\u0001kilde:committed',
  kept: '\u0001kilde:kept',
  retired: '\u0001kilde:retired',
  settings: '\u0001kilde:settings',
} as const;

export type ReservedTenant = keyof typeof RESERVED_TENANTS;

const RESERVED_VALUES: ReadonlySet<string> = new Set(Object.values(RESERVED_TENANTS));

export const RESERVED_TENANT_VALUES: readonly string[] = [...RESERVED_VALUES];

/** `meta.collection_type` of ledger entries. */
export const LEDGER_TYPE = 'kilde-ledger';

/** The caller's collection names without the reserved tenants (a search can never reach those). */
export function publicTenants(names: readonly string[]): string[] {
  return names.filter((n) => !RESERVED_VALUES.has(n));
}
