import { GetObjectCommand, HeadObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import type { Logger } from 'pino';
import type { ObjectStoreSettings } from '../config/ingest.js';
import { KildeError } from '../http/errors.js';
import { streamToFile, tooLarge } from './byte-limit.js';

export interface ObjectHead {
  bytes: number;
  contentType?: string;
}

export interface ObjectStore {
  /** Whether the operator allows reading from this bucket (OBJECTSTORE_ALLOWED_BUCKETS). */
  allows(bucket: string): boolean;
  /** HeadObject: the size is known before a byte of the body is fetched. */
  head(bucket: string, key: string): Promise<ObjectHead>;
  /** Streams the object into `path` (never into memory), enforcing `maxBytes` on the bytes received. */
  download(bucket: string, key: string, path: string, maxBytes: number): Promise<number>;
  close(): void;
}

export function createObjectStore(settings: ObjectStoreSettings, deps: { log: Logger }): ObjectStore {
  const client = new S3Client({
    region: settings.region,
    forcePathStyle: settings.forcePathStyle,
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 120_000 },
  });
  const allowed = new Set(settings.allowedBuckets);

  function fail(err: unknown, bucket: string, key: string): KildeError {
    if (err instanceof KildeError) return err;
    const status = err instanceof S3ServiceException ? err.$metadata.httpStatusCode : undefined;
    const name = err instanceof Error ? err.name : 'Error';
    const what =
      status === 404 || name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchBucket'
        ? 'object not found'
        : status === 403 || name === 'AccessDenied'
          ? 'access to the object was denied'
          : status !== undefined
            ? `object storage answered HTTP ${status}`
            : 'object storage unreachable';
    deps.log.warn({ err, bucket, key, status }, 'object fetch failed');
    return new KildeError('OBJECT_FETCH_FAILED', 502, `Could not fetch s3://${bucket}/${key}: ${what}`, {
      cause: err,
      // The caller named the bucket and key; the reason names no endpoint.
      expose: true,
    });
  }

  return {
    allows: (bucket) => allowed.size === 0 || allowed.has(bucket),

    async head(bucket, key) {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
        return {
          bytes: head.ContentLength ?? 0,
          ...(head.ContentType ? { contentType: head.ContentType } : {}),
        };
      } catch (err) {
        throw fail(err, bucket, key);
      }
    },

    async download(bucket, key, path, maxBytes) {
      try {
        const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        const body = got.Body as NodeJS.ReadableStream | undefined;
        if (!body) throw new Error('GetObject returned no body');
        if ((got.ContentLength ?? 0) > maxBytes) {
          (body as unknown as { destroy?: () => void }).destroy?.();
          throw tooLarge(maxBytes);
        }
        return await streamToFile(body, path, maxBytes);
      } catch (err) {
        throw fail(err, bucket, key);
      }
    },

    close: () => client.destroy(),
  };
}
