/**
 * glibc's allocator raises its mmap threshold (from 128 KiB up to 32 MiB) each time a large block
 * is freed, after which blocks of that size come from the heap arenas, and an arena returns memory
 * to the kernel only from its top. LanceDB's full-text index refresh allocates and frees many such
 * blocks on its worker threads, so a long ingest kept growing by fragments nobody used: 100 writes of
 * 1000 rows with an optimize every 10 grew a bare LanceDB process to 446 MiB, and to 262 MiB with
 * the threshold pinned at 128 KiB, no slower (docs/performance.md, "Large files: the allocator").
 * Pinning it (setting it at all turns the dynamic raise off) is the glibc tunable below.
 *
 * A tunable is read once, when a process starts, so it cannot be applied to the process already
 * running: the `kilde` launcher (bin/kilde), `npm start` and the Docker image set it before Node
 * starts (a test keeps them equal to this value), and the CLI puts it in its own environment so that every process it starts (the
 * extraction pool's workers) gets it. An operator's own `GLIBC_TUNABLES` is kept; the threshold is
 * added only when it names none. Other C libraries (musl, macOS) ignore the variable.
 */
export const MMAP_THRESHOLD_TUNABLE = 'glibc.malloc.mmap_threshold=131072';

/** `GLIBC_TUNABLES` with the mmap threshold added, unless the operator's value already sets one. */
export function withMallocTunables(current: string | undefined): string {
  if (current === undefined || current.trim() === '') return MMAP_THRESHOLD_TUNABLE;
  if (/(^|:)glibc\.malloc\.mmap_threshold=/.test(current)) return current;
  return `${current}:${MMAP_THRESHOLD_TUNABLE}`;
}

/**
 * V8 sizes its young generation from the machine's memory: on a 24 GiB host Node 24 lets each
 * semi-space grow to 64 MiB, so every busy process keeps up to 128 MiB of young generation (plus the
 * promoted garbage it flushes into the old generation) whatever it holds. Ingesting a 20 MiB text
 * file peaked at 737 MiB over the CLI and its worker; with 8 MiB semi-spaces at 561 MiB, and 1000
 * small files at 560 instead of 630 MiB, with no measurable CPU cost (docs/performance.md, "Large
 * files: the young generation"). Like the tunable above it is read once, at start: the `kilde`
 * launcher (bin/kilde), `npm start` and the Docker image put it in `NODE_OPTIONS`, and the CLI adds it
 * to its own environment so that the processes it starts (the extraction pool's workers) get it. An
 * operator's own `--max-semi-space-size` in `NODE_OPTIONS` is kept.
 */
export const YOUNG_GENERATION_FLAG = '--max-semi-space-size=8';

/** `NODE_OPTIONS` with the young generation's size added, unless the operator's value already sets one. */
export function withYoungGenerationFlag(current: string | undefined): string {
  if (current === undefined || current.trim() === '') return YOUNG_GENERATION_FLAG;
  if (/(^|\s)--max-semi-space-size(=|\s|$)/.test(current)) return current;
  return `${current} ${YOUNG_GENERATION_FLAG}`;
}

/** Sets both in `env` (the process's own environment) for every process started from here on. */
export function applyProcessMemorySettings(env: Record<string, string | undefined>): void {
  env.GLIBC_TUNABLES = withMallocTunables(env.GLIBC_TUNABLES);
  env.NODE_OPTIONS = withYoungGenerationFlag(env.NODE_OPTIONS);
}
