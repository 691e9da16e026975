import {
  bool,
  int,
  list,
  oneOf,
  optionalCaselessOneOf,
  optionalString,
  requiredString,
  string,
  url,
} from './fields.js';
import { tracingPiece } from './telemetry.js';

/** Pieces composed into every service's schema. */
export const serverPiece = {
  HOST: string('0.0.0.0', 'Bind address.'),
  PORT: int(8000, 'Bind port.', { min: 0, max: 65535 }),
  REQUEST_TIMEOUT: int(
    120,
    'Seconds allowed to receive one whole request, body included (0 disables); raise it for slow large uploads.',
    {
      min: 0,
    },
  ),
  SHUTDOWN_GRACE: int(10, 'Seconds to drain in-flight requests on SIGTERM/SIGINT before closing.', {
    min: 0,
  }),
};

export const authPiece = {
  API_KEY: requiredString(
    'Inbound bearer key for every protected route (and `/metrics`). Start-up fails without it.',
  ),
  API_KEYS_FILE: optionalString(
    'Per-tenant keys: a JSON file `{"<key>": {"collections": ["a", "b"], "name": "dify"}}` (keys of 16+ printable ASCII characters). Such a key may call only the routes that take collection names (`POST /search`, `POST /retrieval`, `/mcp` search tools, ingest, eval, listings), for its collections only; `API_KEY` keeps full access. Read at start-up (a bad file stops it); see docs/api.md.',
  ),
  API_KEYS: optionalString(
    'Per-tenant keys as inline JSON, the same shape as `API_KEYS_FILE` (both may be set; every key must be distinct).',
  ),
  USER_ACCESS_FILE: optionalString(
    'Per-user access for a chat platform that forwards who is asking (Open WebUI\'s `X-OpenWebUI-User-*` headers and header templates): a JSON or YAML file `{"trusted_keys": ["openwebui"], "groups": {"<group name or id>": ["collection", ...]}, "users": {"<user id or email>": [...]}}`. A request from a trusted key (a per-tenant key\'s `name`, or `API_KEY` for the main key) that names a user searches only the collections of that user\'s groups and entries, within those its key allows (`POST /search`, `/mcp` `search_knowledge` and `list_collections`, the listings); headers from any other key are ignored. Read at start-up (a bad file stops it); see docs/integrations.md.',
  ),
  USER_ACCESS: optionalString(
    'Per-user access as inline JSON or YAML, the same shape as `USER_ACCESS_FILE` (not both).',
  ),
  USER_ACCESS_JWT_SECRET: optionalString(
    "Open WebUI's `FORWARD_USER_INFO_HEADER_JWT_SECRET`. Set (with `USER_ACCESS_FILE` or `USER_ACCESS`), a trusted key's request that carries `X-OpenWebUI-User-Jwt` names its user by that JWT (HS256, issuer `open-webui`, `exp` and `sub` required) instead of the plain id and e-mail headers, and one whose JWT does not verify is refused 401; groups still come from the `{{USER_GROUPS}}` header templates. See docs/integrations.md.",
  ),
};

export const logPiece = {
  DEBUG: bool(
    false,
    'Operator triage switch: debug-level logs (unless `LOG_LEVEL_APP` says otherwise) and internal details in 5xx bodies.',
  ),
  LOG_LEVEL_APP: optionalCaselessOneOf(
    ['trace', 'debug', 'info', 'warning', 'warn', 'error', 'critical'],
    'Log level of the application logger; `DEBUG` shows detector signals. Defaults to `debug` when `DEBUG=true`, else `info`.',
  ),
  LOG_FORMAT: oneOf(
    ['auto', 'json', 'pretty'],
    'auto',
    'Log format; `auto` is pretty on a TTY and JSON otherwise.',
  ),
};

export const metricsPiece = {
  METRICS_ENABLED: bool(
    true,
    'Serves Prometheus metrics at `GET /metrics` (bearer-protected); 404 when false.',
  ),
  OPENAPI_ENABLED: bool(
    true,
    'Serves the OpenAPI document at `GET /openapi.json` and its rendered docs at `GET /docs` (self-hosted assets), both without the key: they describe routes, never data. 404 when false.',
  ),
};

export const llmPiece = {
  AGENT_MODEL: string(
    'gpt-4o-mini',
    'Model used for LLM calls (echo rewrite, query generation, the agentic retrieval loop).',
  ),
  AGENT_API_BASE_URL: url(
    'http://localhost:4000/v1',
    'OpenAI-compatible chat-completions base URL; its `/v1` segment is kept (`{base}/chat/completions`).',
  ),
  AGENT_API_KEY: string('', 'Key sent as `Authorization: Bearer` to the LLM endpoint; empty sends none.'),
  AGENT_TIMEOUT: int(
    60,
    'LLM call time-out in seconds; in the agentic retrieval loop the wall-clock budget of the whole run (seed search, every LLM and tool call), after which what was found is returned.',
    { min: 1 },
  ),
  AGENT_STRICT_TOOLS: bool(
    true,
    'Strict tool schemas for every tool of the agent: the agentic loop sends its `retrieve` tool with `"strict": true`, and the agent service\'s MCP tools list `additionalProperties: false` and refuse unknown arguments. `false` for models that do not support strict schemas: no `strict` field, unknown arguments ignored.',
  ),
};

/** Browsers on other origins (docs/api.md, "CORS"): off unless origins are named. */
export const corsPiece = {
  CORS_ORIGINS: list(
    "Origins whose browser pages may call Kilde (CORS), comma-separated or a JSON list, e.g. `https://chat.example.com` (Open WebUI's tool servers added by a user, a browser MCP client); `*` allows any. Preflights (`OPTIONS`) never need the key. Empty: no CORS headers. `/mcp` also checks `MCP_ALLOWED_ORIGINS`.",
  ),
};

export const kernelPieces = {
  ...serverPiece,
  ...authPiece,
  ...logPiece,
  ...metricsPiece,
  ...corsPiece,
  ...tracingPiece,
};

/** The web console at `/` (docs/console.md): off in the single services, on in `serve all`. */
export const consolePiece = {
  CONSOLE_ENABLED: bool(
    false,
    'Serves the web console (static files built into `dist/console`) at `/`. Off in `serve ingest` and `serve retrieve` unless set; on in `serve all`. It calls the same bearer-protected API as every other client; the key stays in the browser tab.',
  ),
};
