import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ingestSchema, objectStoreSettings } from '../../src/config/ingest.js';
import { ConfigError } from '../../src/config/parse.js';
import { KildeError } from '../../src/errors.js';
import { createObjectStore, type ObjectStore } from '../../src/ingest/object-store.js';
import { testConfig } from '../helpers/app.js';
import { type FakeS3, S3_KEYS, startS3 } from './helpers/s3.js';

const log = pino({ level: 'silent' });
let s3: FakeS3;
let store: ObjectStore;
let dir: string;

beforeAll(async () => {
  s3 = await startS3();
  await s3.createBucket('docs');
  await s3.put('docs', 'a/hello.txt', 'hello object storage', 'text/plain');
  await s3.put('docs', 'big.bin', Buffer.alloc(4096, 7));
  store = createObjectStore(
    {
      endpoint: s3.endpoint,
      region: 'us-east-1',
      credentials: S3_KEYS,
      forcePathStyle: true,
      allowedBuckets: [],
    },
    { log },
  );
  dir = await mkdtemp(join(tmpdir(), 'kilde-os-test-'));
});
afterAll(async () => {
  store.close();
  await s3.close();
  await rm(dir, { recursive: true, force: true });
});

describe('object store over s3rver', () => {
  it('reads the size with HeadObject and streams the object to a file', async () => {
    expect(await store.head('docs', 'a/hello.txt')).toEqual({ bytes: 20, contentType: 'text/plain' });
    const path = join(dir, 'hello.txt');
    expect(await store.download('docs', 'a/hello.txt', path, 1000)).toBe(20);
    expect(await readFile(path, 'utf8')).toBe('hello object storage');
  });

  it('fails with 413 as soon as the streamed bytes exceed the limit', async () => {
    const path = join(dir, 'big.bin');
    const err = await store.download('docs', 'big.bin', path, 1000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KildeError);
    expect((err as KildeError).statusCode).toBe(413);
    expect((err as KildeError).code).toBe('INVALID_REQUEST');
  });

  it('maps a missing object and a missing bucket to 404 OBJECT_FETCH_FAILED', async () => {
    for (const [bucket, key] of [
      ['docs', 'nope.pdf'],
      ['no-such-bucket', 'x'],
    ] as const) {
      const err = (await store.head(bucket, key).catch((e: unknown) => e)) as KildeError;
      expect(err.code).toBe('OBJECT_FETCH_FAILED');
      expect(err.statusCode).toBe(404);
      expect(err.message).toBe(`Could not fetch s3://${bucket}/${key}: object not found`);
    }
  });

  it('maps an unreachable endpoint to OBJECT_FETCH_FAILED', async () => {
    const dead = createObjectStore(
      {
        endpoint: 'http://127.0.0.1:9',
        region: 'us-east-1',
        credentials: S3_KEYS,
        forcePathStyle: true,
        allowedBuckets: [],
      },
      { log },
    );
    const err = (await dead.head('docs', 'x').catch((e: unknown) => e)) as KildeError;
    dead.close();
    expect(err.code).toBe('OBJECT_FETCH_FAILED');
    expect(err.message).toMatch(/unreachable/);
  });

  it('says the credentials are missing when the SDK finds none (not "unreachable")', async () => {
    // The SDK's own chain (variables, ~/.aws, instance metadata), kept off this machine's.
    for (const v of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE'])
      vi.stubEnv(v, undefined);
    vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', join(dir, 'no-credentials'));
    vi.stubEnv('AWS_CONFIG_FILE', join(dir, 'no-config'));
    vi.stubEnv('AWS_EC2_METADATA_DISABLED', 'true');
    const bare = createObjectStore(
      { endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, allowedBuckets: [] },
      { log },
    );
    try {
      const err = (await bare.head('docs', 'a/hello.txt').catch((e: unknown) => e)) as KildeError;
      expect(err.code).toBe('OBJECT_FETCH_FAILED');
      expect(err.statusCode).toBe(502);
      expect(err.message).toBe(
        'Could not fetch s3://docs/a/hello.txt: no object-storage credentials are configured: set OBJECTSTORE_ACCESS_KEY and OBJECTSTORE_SECRET_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)',
      );
    } finally {
      bare.close();
      vi.unstubAllEnvs();
    }
  });
});

describe('object store settings', () => {
  const base = { EMBEDDING_PROVIDER: 'none' };
  it('uses OBJECTSTORE_* and turns path style on when an endpoint is set', () => {
    const c = testConfig(ingestSchema, {
      ...base,
      OBJECTSTORE_ENDPOINT: 'http://minio:9000',
      OBJECTSTORE_ACCESS_KEY: 'ak',
      OBJECTSTORE_SECRET_KEY: 'sk',
      OBJECTSTORE_ALLOWED_BUCKETS: 'one, two',
      AWS_ACCESS_KEY_ID: 'ignored',
      AWS_SECRET_ACCESS_KEY: 'ignored',
    });
    expect(objectStoreSettings(c)).toEqual({
      endpoint: 'http://minio:9000',
      region: 'us-east-1',
      credentials: { accessKeyId: 'ak', secretAccessKey: 'sk' },
      forcePathStyle: true,
      allowedBuckets: ['one', 'two'],
    });
  });

  it('falls back to the standard AWS variables', () => {
    const c = testConfig(ingestSchema, {
      ...base,
      AWS_ENDPOINT_URL: 'https://s3.example.test',
      AWS_REGION: 'eu-north-1',
      AWS_ACCESS_KEY_ID: 'AKIA',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_SESSION_TOKEN: 'tok',
      OBJECTSTORE_FORCE_PATH_STYLE: 'false',
    });
    expect(objectStoreSettings(c)).toEqual({
      endpoint: 'https://s3.example.test',
      region: 'eu-north-1',
      credentials: { accessKeyId: 'AKIA', secretAccessKey: 'secret', sessionToken: 'tok' },
      forcePathStyle: false,
      allowedBuckets: [],
    });
  });

  it('leaves credentials to the SDK chain when none are set, and defaults to virtual-host style on AWS', () => {
    const c = testConfig(ingestSchema, base);
    expect(objectStoreSettings(c)).toEqual({
      region: 'us-east-1',
      forcePathStyle: false,
      allowedBuckets: [],
    });
  });

  it('refuses half a key pair', () => {
    const c = testConfig(ingestSchema, { ...base, OBJECTSTORE_ACCESS_KEY: 'ak' });
    expect(() => objectStoreSettings(c)).toThrow(ConfigError);
  });

  it('requires EMBEDDING_PROVIDER for kilde serve ingest', () => {
    expect(() => testConfig(ingestSchema, {})).toThrow(
      /EMBEDDING_PROVIDER is required by `kilde serve ingest`/,
    );
  });
});
