import { posix } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Logger } from 'pino';
import type { ObjectStoreSettings } from '../config/ingest.js';
import { KildeError } from '../errors.js';
import { identifierProblem } from '../index/identifiers.js';
import { streamToFile, tooLarge } from './byte-limit.js';
import { invalid } from './request.js';

export interface ObjectHead {
  bytes: number;
  contentType?: string;
}

export interface ObjectStore {
  /**
   * Refuses a bucket and key before anything is fetched: 400 for a malformed or ambiguous reference,
   * 403 for a bucket outside OBJECTSTORE_ALLOWED_BUCKETS, judged on the path the endpoint resolves.
   */
  check(bucket: string, key: string): void;
  /** HeadObject: the size is known before a byte of the body is fetched. */
  head(bucket: string, key: string): Promise<ObjectHead>;
  /** Streams the object into `path` (never into memory), enforcing `maxBytes` on the bytes received. */
  download(bucket: string, key: string, path: string, maxBytes: number): Promise<number>;
  close(): void;
}

/**
 * S3's bucket alphabet, plus the upper case and underscores of legacy AWS buckets; 1 to 255 long.
 * Anything else (a slash above all) could change which bucket a path-style URL names.
 */
const BUCKET = /^[A-Za-z0-9._-]{1,255}$/;

/**
 * Path-style endpoints (MinIO, most S3-compatible stores) resolve `.` and `..` segments and merge
 * slashes, so `allowed/../secret/x` would be read from `secret`. Returns the bucket and key the
 * endpoint would see.
 */
export function resolvedObject(bucket: string, key: string): { bucket: string; key: string } {
  const path = posix.normalize(`/${bucket}/${key}`);
  const [, first = '', ...rest] = path.split('/');
  return { bucket: first, key: rest.join('/') };
}

export function checkObjectRef(bucket: string, key: string, allowed: ReadonlySet<string>): void {
  for (const [field, value] of [
    ['bucket', bucket],
    ['key', key],
  ] as const) {
    const problem = identifierProblem(value);
    if (problem !== undefined) throw invalid(`Invalid request: ${field} ${problem}`);
  }
  if (!BUCKET.test(bucket) || bucket === '.' || bucket === '..') {
    throw invalid(`Invalid request: ${JSON.stringify(bucket)} is not a valid bucket name`);
  }
  const resolved = resolvedObject(bucket, key);
  if (allowed.size > 0 && !allowed.has(resolved.bucket)) {
    throw invalid(`Bucket ${resolved.bucket} is not allowed`, 'forbidden');
  }
  if (resolved.bucket !== bucket || resolved.key !== key) {
    throw invalid(
      'Invalid request: key must not contain "." or ".." segments, a leading slash or empty segments',
    );
  }
}

/** Object-storage answers that are about the caller's reference, not about storage being down. */
/** The caller's error (a missing object, a name storage rejects), or undefined when it is ours (502). */
function callerError(status: number | undefined, name: string): 'notFound' | 'badReference' | undefined {
  if (status === 404 || name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchBucket')
    return 'notFound';
  if (status === 400 || name === 'InvalidBucketName' || name === 'KeyTooLongError') return 'badReference';
  return undefined;
}

export function createObjectStore(settings: ObjectStoreSettings, deps: { log: Logger }): ObjectStore {
  // The AWS SDK loads on the first object fetched, not at start-up: most deployments and every local
  // `kilde` command never fetch one, and its module graph is the largest Kilde has.
  let sdk: Promise<{ s3: typeof import('@aws-sdk/client-s3'); client: S3Client }> | undefined;
  const connect = () =>
    (sdk ??= import('@aws-sdk/client-s3').then((s3) => ({
      s3,
      client: new s3.S3Client({
        region: settings.region,
        forcePathStyle: settings.forcePathStyle,
        ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
        ...(settings.credentials ? { credentials: settings.credentials } : {}),
        requestHandler: { connectionTimeout: 10_000, requestTimeout: 120_000 },
      }),
    })));
  const allowed = new Set(settings.allowedBuckets);

  async function fail(err: unknown, bucket: string, key: string): Promise<KildeError> {
    if (err instanceof KildeError) return err;
    const { S3ServiceException } = (await sdk)?.s3 ?? {};
    const status =
      S3ServiceException && err instanceof S3ServiceException ? err.$metadata.httpStatusCode : undefined;
    const name = err instanceof Error ? err.name : 'Error';
    // A missing object or a name storage rejects is the caller's error (4xx); a refused key (403:
    // our credentials) or storage being down is ours (502).
    const caller = callerError(status, name);
    const what =
      caller === 'notFound'
        ? 'object not found'
        : caller === 'badReference'
          ? `object storage refused the reference (${name})`
          : status === 403 || name === 'AccessDenied'
            ? 'access to the object was denied'
            : // The SDK found no key in the variables, files or instance metadata it looks in.
              name === 'CredentialsProviderError'
              ? 'no object-storage credentials are configured: set OBJECTSTORE_ACCESS_KEY and OBJECTSTORE_SECRET_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)'
              : status !== undefined
                ? `object storage answered HTTP ${status}`
                : 'object storage unreachable';
    if (caller === undefined) deps.log.warn({ err, bucket, key, status }, 'object fetch failed');
    else deps.log.info({ bucket, key, status, name }, 'object reference refused by object storage');
    return new KildeError(
      'OBJECT_FETCH_FAILED',
      `Could not fetch s3://${bucket}/${key}: ${what}`,
      // The caller named the bucket and key; the reason names no endpoint.
      { variant: caller, cause: err, expose: true },
    );
  }

  return {
    check: (bucket, key) => checkObjectRef(bucket, key, allowed),

    async head(bucket, key) {
      try {
        const { s3, client } = await connect();
        const head = await client.send(new s3.HeadObjectCommand({ Bucket: bucket, Key: key }));
        return {
          bytes: head.ContentLength ?? 0,
          ...(head.ContentType ? { contentType: head.ContentType } : {}),
        };
      } catch (err) {
        throw await fail(err, bucket, key);
      }
    },

    async download(bucket, key, path, maxBytes) {
      try {
        const { s3, client } = await connect();
        const got = await client.send(new s3.GetObjectCommand({ Bucket: bucket, Key: key }));
        const body = got.Body as NodeJS.ReadableStream | undefined;
        if (!body) throw new Error('GetObject returned no body');
        if ((got.ContentLength ?? 0) > maxBytes) {
          (body as unknown as { destroy?: () => void }).destroy?.();
          throw tooLarge(maxBytes);
        }
        return await streamToFile(body, path, maxBytes);
      } catch (err) {
        throw await fail(err, bucket, key);
      }
    },

    close: () => {
      void sdk?.then(({ client }) => client.destroy());
    },
  };
}
