import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import type { Env } from '../config/parse.js';
import type { CliIo } from './commands.js';
import { debugOn, describeError, exitCodeOf } from './fail.js';
import { applyProcessMemorySettings } from './process-memory.js';

type Register = (program: Command, io: CliIo) => void;
const search = () => import('./search-command.js').then((m) => m.registerSearchCommands);
/**
 * The module that registers each command, by the name it is run with: a run loads its own only
 * (`kilde ingest --url` loads no index, evaluation, model or service code: ≈ 45 ms of a client's
 * start); help, `--version` or a name not listed here loads them all.
 */
const COMMANDS: Record<string, () => Promise<Register>> = {
  ingest: () => import('./ingest-command.js').then((m) => m.registerIngestCommand),
  search,
  extract: search,
  documents: () => import('./documents-command.js').then((m) => m.registerDocumentsCommands),
  eval: () => import('./eval-command.js').then((m) => m.registerEvalCommands),
  models: () => import('./models-command.js').then((m) => m.registerModelsCommands),
};

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** The program with the commands `argv` may run: the one it names (`COMMANDS`), else every command. */
export async function buildProgram(io: CliIo, argv: readonly string[] = []): Promise<Command> {
  const named = argv.slice(2).find((a) => !a.startsWith('-'));
  const only = named !== undefined && Object.hasOwn(COMMANDS, named) ? named : undefined;
  const program = new Command();
  program
    .name('kilde')
    .description(
      'Self-hosted RAG backend for chat platforms: ingest, retrieve, agent and MCP tools over one index.',
    )
    .version(packageVersion(), '-v, --version')
    // Usage errors are thrown (subcommands inherit both settings) and reported by `main` as one
    // line with exit 2, like a configuration error; help and --version still exit 0.
    .exitOverride()
    // (`writeErr` carries only the help shown after a command named without its subcommand.)
    .configureOutput({ outputError: () => undefined, writeErr: () => undefined })
    // `kilde eval` takes options its subcommands also take (--json, --url): each command keeps its own.
    .enablePositionalOptions();
  if (only) {
    (await COMMANDS[only]!())(program, io);
    return program;
  }
  const { SERVICES } = await import('./services.js');
  program
    .command('serve')
    .description(
      `start a service: ${[...SERVICES.map((s) => `${s.name} (${s.summary})`), 'all (every service on one port)'].join(', ')}`,
    )
    .argument('<service>', 'agent | tools | ingest | retrieve | extractor | all')
    .action(async (service: string) => {
      // The HTTP kernel (fastify and its plugins) loads only for the commands that serve.
      const { startService } = await import('./serve.js');
      await startService(service, io.env);
    });

  program
    .command('quickstart')
    .description(
      '`npm start`: serve all on the embedded defaults, generate and store a key if API_KEY is unset, ingest Kilde’s docs',
    )
    .action(async () => {
      const { runQuickstart } = await import('./quickstart.js');
      await runQuickstart(io.env, io.out);
    });

  const registers = await Promise.all([...new Set(Object.values(COMMANDS))].map((load) => load()));
  for (const register of registers) register(program, io);
  return program;
}

/** Entry point of bin/kilde.js. Every failure is one line on stderr and a non-zero exit code. */
export async function main(argv: string[], env: Env = process.env) {
  const io: CliIo = { env, out: process.stdout, err: process.stderr };
  // For the processes started from here (the extraction pool); this one read its own at start.
  if (env === process.env) applyProcessMemorySettings(process.env);
  try {
    await (await buildProgram(io, argv)).parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help or the version was printed (to stderr after a command named without its subcommand).
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') process.exit(0);
      // `kilde help` asked for it (0); `kilde documents` without a subcommand is a usage error.
      if (err.code === 'commander.help' && err.exitCode === 0) process.exit(0);
      process.stderr.write(`kilde: ${usageLine(err, argv)}\n`);
      process.exit(2);
    }
    process.stderr.write(`kilde: ${describeError(err, debugOn(env))}\n`);
    process.exit(exitCodeOf(err));
  }
}

/** Commander's message without its `error: ` prefix, and where the usage is written down. */
function usageLine(err: CommanderError, argv: readonly string[]): string {
  const command = argv.slice(2).find((a) => !a.startsWith('-'));
  const known = command !== undefined && /^[a-z]+$/.test(command) ? ` ${command}` : '';
  const help = err.code === 'commander.unknownCommand' ? 'kilde --help' : `kilde${known} --help`;
  const what =
    err.code === 'commander.help'
      ? `${known.trim() || 'kilde'} needs a command`
      : err.message.replace(/^error: /, '');
  return `${what} (usage: ${help})`;
}
