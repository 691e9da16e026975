import type { DenseEmbedder } from '../../src/embed/dense.js';

/** Answers one fixed unit vector per text: the pipeline's cost without a model's. */
export function zeroCostEmbedder(dim: number): DenseEmbedder {
  const unit = [1, ...new Array<number>(dim - 1).fill(0)];
  return {
    provider: 'zero-cost',
    model: 'none',
    dim,
    embedDocuments: async (texts) => texts.map(() => unit),
    embedQuery: async () => [...unit],
  };
}

/**
 * An OpenAI-compatible `POST /v1/embeddings` endpoint answering the same unit vector for every input
 * (base64 float32 when asked, else numbers): a real Kilde process's dense path (`EMBEDDING_PROVIDER=
 * http-compat`) with no model's cost, for benches that compare it with an in-process zero-cost
 * embedder. Serves on 127.0.0.1; its CPU is this process's, not the client's.
 */
export async function serveZeroCostEmbeddings(
  dim: number,
): Promise<{ url: string; close: () => Promise<void> }> {
  const { createServer } = await import('node:http');
  const unit = new Float32Array(dim);
  unit[0] = 1;
  const base64 = Buffer.from(unit.buffer).toString('base64');
  const numbers = Array.from(unit);
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as {
        model: string;
        input: string[];
        encoding_format?: string;
      };
      const embedding = body.encoding_format === 'base64' ? base64 : numbers;
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          object: 'list',
          model: body.model,
          data: body.input.map((_, index) => ({ object: 'embedding', index, embedding })),
          usage: { prompt_tokens: 0, total_tokens: 0 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
