import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { ConfigError, parseConfig } from '../config/parse.js';
import { buildApp, startParts } from '../http/app.js';
import { createLogger } from '../http/logger.js';
import { serve } from '../http/server.js';
import { findService, SERVICES } from './services.js';

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** Reports a config (or usage) problem as one line and exits non-zero: never a stack trace. */
function fail(message: string, code = 2): never {
  process.stderr.write(`kilde: ${message}\n`);
  process.exit(code);
}

export async function runServe(name: string, env: NodeJS.ProcessEnv) {
  const def = findService(name);
  if (!def)
    fail(`unknown service "${name}"; choose one of ${[...SERVICES.map((s) => s.name), 'all'].join(', ')}`);
  let config: Readonly<Record<string, unknown>>;
  try {
    config = parseConfig(def.schema, env);
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  const kernel = config as unknown as import('../config/agent.js').KernelConfig;
  const log = createLogger(kernel);
  const parts = await def.create(config, log);
  const app = await buildApp(kernel, { logger: log, parts });
  await startParts(parts);
  const address = await serve(app, {
    host: kernel.HOST,
    port: kernel.PORT,
    requestTimeoutS: kernel.REQUEST_TIMEOUT,
    graceS: kernel.SHUTDOWN_GRACE,
  });
  log.info({ service: def.name, address }, 'kilde listening');
}

export async function main(argv: string[]) {
  const program = new Command();
  program
    .name('kilde')
    .description(
      'Self-hosted RAG backend for chat platforms: ingest, retrieve, agent and MCP tools over one index.',
    )
    .version(packageVersion(), '-v, --version');

  program
    .command('serve')
    .description(
      `start a service: ${[...SERVICES.map((s) => `${s.name} (${s.summary})`), 'all (every service on one port)'].join(', ')}`,
    )
    .argument('<service>', 'agent | tools | ingest | retrieve | extractor | all')
    .action(async (service: string) => runServe(service, process.env));

  await program.parseAsync(argv);
}
