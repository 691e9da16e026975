import { ERRORS, type ErrorSpec } from '../src/errors.js';

/** docs/errors.md, generated from the one error table in src/errors.ts. */
export function renderErrorDocs(): string {
  const rows = (Object.entries(ERRORS) as [string, ErrorSpec][]).map(([code, e]) => {
    const variants = Object.entries(e.variants ?? {}).map(([name, s]) => `${s} (\`${name}\`)`);
    const statuses = [`**${e.status}**`, ...variants].join(', ');
    return `| \`${code}\` | ${statuses} | ${e.retryable ? 'yes' : 'no'} | ${e.publicMessage} | ${e.meaning} |`;
  });
  return [
    '# Error reference',
    '',
    '<!-- Generated from src/errors.ts by `npm run docs:errors`; a test fails when this file is stale. -->',
    '',
    'Every failure answers one stable `code`. Kernel routes (`/search`, `/echo`, `/weather`, the',
    'document routes) answer `{"detail": "...", "code": "..."}`; ingestion answers',
    '`{"status": false, "error": "...", "code": "..."}` (the contract\'s shape). With `DEBUG=true` a',
    '`debug` field carries the internal reason.',
    '',
    'The status in bold is the usual one; each other status is a named case of the code (its *variant*, in',
    'brackets, as `src/errors.ts` names it), used where the meaning says. *Retryable* means',
    'the same request may succeed later (an upstream overloaded or still starting); an adapter may say',
    'otherwise for one failure (an index that refuses the settings is not retryable). A 5xx shows the',
    '*client message* unless its own message was written for clients (it names no internal endpoint);',
    "the thrower's message goes to the log, and to `debug`.",
    '',
    '| Code | HTTP status | Retryable | Client message (5xx) | Meaning |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    'MCP tools answer JSON-RPC errors instead (see [mcp.md](mcp.md)); `/health/ready` answers 503 with',
    '`{"status": "error", "detail": "..."}` naming each failing probe.',
    '',
  ].join('\n');
}
