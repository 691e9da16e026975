import { resolve } from 'node:path';
import type { Command } from 'commander';
import {
  type CliIo,
  collections,
  positiveInt,
  type Remote,
  remoteOptions,
  requireCollections,
  withBackend,
} from './commands.js';
import { renderHits } from './render.js';

/* `kilde search` and `kilde extract`. */

export function registerSearchCommands(program: Command, io: CliIo): void {
  remoteOptions(
    program
      .command('search')
      .description('search one or more collections')
      .argument('<query>', 'what to look for')
      .requiredOption('-c, --collection <name>', 'collection(s), comma-separated or repeated', collections)
      .option('-k <k>', 'number of hits', positiveInt('-k', 100), 5)
      .option('--json', 'print the POST /search response as JSON'),
  ).action(async (query: string, o: Remote & { collection: string[]; k: number; json?: boolean }) => {
    await withBackend(io, o, undefined, async (backend) => {
      await requireCollections(backend, o.collection);
      const result = await backend.search({ queries: [query], collection_names: o.collection, k: o.k });
      const ansi = io.out.isTTY === true && io.env.NO_COLOR === undefined;
      io.out.write(o.json ? `${JSON.stringify(result)}\n` : renderHits(result, query, ansi));
    });
  });

  remoteOptions(
    program
      .command('extract')
      .description('extract a file and print its text and metadata (nothing is stored)')
      .argument('<file>', 'the document')
      .option('--engine <engine>', 'extraction engine (default EXTRACTION_ENGINE)')
      .option('--json', 'print the POST /api/v1/extract documents as JSON'),
  ).action(async (file: string, o: Remote & { engine?: string; json?: boolean }) => {
    // The engine goes in the request body over HTTP, so it is not a local-only option here.
    const local = !(o.url ?? io.env.KILDE_URL);
    await withBackend(io, o, local ? o.engine : undefined, async (backend) => {
      const result = await backend.extract(resolve(file), o.engine);
      if (o.json) {
        io.out.write(`${JSON.stringify(result, null, 2)}\n`);
        return;
      }
      for (const [i, doc] of (
        result.documents as { text: string; metadata: Record<string, unknown> }[]
      ).entries()) {
        io.out.write(`--- document ${i + 1} (engine ${result.engine}) ---\n`);
        for (const [key, value] of Object.entries(doc.metadata)) {
          if (value !== undefined)
            io.out.write(`${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}\n`);
        }
        io.out.write(`\n${doc.text}\n`);
      }
    });
  });
}
