import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
type S3rverCtor = new (options: {
  port: number;
  address: string;
  silent: boolean;
  directory: string;
  resetOnClose?: boolean;
}) => S3rverInstance;

// s3rver ships CommonJS without types; this names only what the tests use.
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverCtor;

export const S3_KEYS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface FakeS3 {
  endpoint: string;
  client: S3Client;
  createBucket(name: string): Promise<void>;
  put(bucket: string, key: string, body: Buffer | string, contentType?: string): Promise<void>;
  close(): Promise<void>;
}

/** A real S3-compatible server (s3rver) on a loopback port, storing objects in a temp dir. */
export async function startS3(): Promise<FakeS3> {
  const dir = await mkdtemp(join(tmpdir(), 'kilde-s3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: S3_KEYS });
  return {
    endpoint,
    client,
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    async put(bucket, key, body, contentType) {
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: body,
          ...(contentType ? { ContentType: contentType } : {}),
        }),
      );
    },
    async close() {
      client.destroy();
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
