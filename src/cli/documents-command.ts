import { type Command, Option } from 'commander';
import {
  type CliIo,
  collection,
  positiveInt,
  type Remote,
  remoteOptions,
  requireCollections,
  withBackend,
} from './commands.js';
import { CliError } from './fail.js';

/* `kilde documents list|delete|versions|restore|chunks`. */

export function registerDocumentsCommands(program: Command, io: CliIo): void {
  const documents = program.command('documents').description('list, inspect or delete indexed documents');
  remoteOptions(
    documents
      .command('list')
      .description('documents of a collection')
      .requiredOption('-c, --collection <name>', 'collection name', collection)
      .option('--json', 'print JSON'),
  ).action(async (o: Remote & { collection: string; json?: boolean }) => {
    await withBackend(io, o, undefined, async (backend) => {
      await requireCollections(backend, [o.collection]);
      const docs = await backend.listDocuments(o.collection);
      if (o.json) {
        io.out.write(`${JSON.stringify(docs)}\n`);
        return;
      }
      for (const d of docs)
        io.out.write(`${d.file_id}  ${String(d.chunks).padStart(5)} chunks  ${d.source ?? d.name ?? ''}\n`);
      io.out.write(`${docs.length} document(s) in "${o.collection}"\n`);
    });
  });
  remoteOptions(
    documents
      .command('delete')
      .description('delete every chunk of a file (every version, every collection)')
      .argument('<file_id>', 'the file_id (see `documents list`)'),
  ).action(async (fileId: string, o: Remote) => {
    await withBackend(io, o, undefined, async (backend) => {
      const answer = await backend.deleteDocument(fileId);
      // The API answers 200 with nothing deleted (the contract's); a command asked to delete a file
      // that is not there has failed at what it was asked to do.
      if (answer.chunks_deleted === 0) {
        const where = backend.where ? ` in ${backend.where}` : '';
        throw new CliError(
          `no document "${fileId}"${where}: nothing was deleted (kilde documents list -c <collection> shows the file ids)`,
        );
      }
      io.out.write(`${JSON.stringify(answer)}\n`);
    });
  });
  remoteOptions(
    documents
      .command('versions')
      .description("a file's versions: the live one first, then those KEEP_VERSIONS kept, newest first")
      .argument('<file_id>', 'the file_id (see `documents list`)')
      .option('-c, --collection <name>', 'collection (default: the one the file is live in)', collection)
      .option('--json', 'print JSON'),
  ).action(async (fileId: string, o: Remote & { collection?: string; json?: boolean }) => {
    await withBackend(io, o, undefined, async (backend) => {
      const body = await backend.versions(fileId, o.collection);
      if (o.json) {
        io.out.write(`${JSON.stringify(body)}\n`);
        return;
      }
      const versions = (body.versions ?? []) as {
        version: string;
        live: boolean;
        chunks: number;
        written_at: string | null;
        source: string | null;
        content_hash: string;
      }[];
      for (const v of versions) {
        io.out.write(
          `${v.live ? '*' : ' '} ${v.version}  ${String(v.chunks).padStart(5)} chunks  ${v.written_at ?? '(unknown time)'}  ${v.content_hash.slice(0, 12)}  ${v.source ?? ''}\n`,
        );
      }
      io.out.write(
        `${versions.length} version(s) of ${fileId} in "${String(body.collection_name)}" (* live)\n`,
      );
    });
  });
  remoteOptions(
    documents
      .command('restore')
      .description('make a kept version of a file live again (atomically; the live one is kept in its place)')
      .argument('<file_id>', 'the file_id')
      .argument('<version>', 'the version (see `documents versions`)')
      .option('-c, --collection <name>', 'collection (default: the one the file is live in)', collection),
  ).action(async (fileId: string, version: string, o: Remote & { collection?: string }) => {
    await withBackend(io, o, undefined, async (backend) => {
      io.out.write(`${JSON.stringify(await backend.restore(fileId, version, o.collection))}\n`);
    });
  });
  remoteOptions(
    documents
      .command('chunks')
      .description("a file's stored chunks and their metadata")
      .argument('<file_id>', 'the file_id (see `documents list`)')
      .option('--limit <n>', 'chunks per page', positiveInt('--limit', 1000), 50)
      .option('--offset <cursor>', 'next_offset of the previous page')
      .addOption(
        new Option('--content <mode>', 'include chunk text')
          .choices(['false', 'preview', 'full'])
          .default('preview'),
      ),
  ).action(async (fileId: string, o: Remote & { limit: number; offset?: string; content: string }) => {
    await withBackend(io, o, undefined, async (backend) => {
      const query: Record<string, string> = { limit: String(o.limit), include_content: o.content };
      if (o.offset) query.offset = o.offset;
      io.out.write(`${JSON.stringify(await backend.chunks(fileId, query), null, 2)}\n`);
    });
  });
}
