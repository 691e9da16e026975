import { randomUUID } from 'node:crypto';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
  type RouteOptions,
} from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { KernelConfig } from '../config/kernel.js';
import { registerRequestSpans } from '../telemetry/http-server.js';
import { tracingActive } from '../telemetry/tracing.js';
import { accessHooks, loadTenantKeys, type TenantKey } from './access.js';
import { BODY_LIMITS } from './body-limits.js';
import { registerCors } from './cors.js';
import { makeErrorHandler } from './errors.js';
import { type Probe, registerHealth } from './health.js';
import { type InfoPiece, registerInfoRoute } from './info.js';
import { jsonBodyParser } from './json-body-parser.js';
import { createMetricsRegistry, registerHttpMetrics, registerMetricsRoute } from './metrics.js';
import { registerOpenApi } from './openapi.js';
import { closeParts } from './part-lifecycle.js';
import { logRequestLine } from './request-line.js';
import { loadUserAccess, type UserAccessPolicy } from './user-access.js';

export type KildeApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/** What a service hands to the kernel: its routes, readiness probes and clean-up. */
export interface ServicePart {
  name: string;
  /** Registered inside its own encapsulated plugin, after the kernel routes. */
  register: (app: KildeApp, ctx: PartContext) => Promise<void> | void;
  probes?: Probe[];
  /** Its piece of `GET /api/v1/info` (src/http/info.ts). */
  info?: () => InfoPiece | Promise<InfoPiece>;
  /** Runs once at start-up (after routes are registered, before listening): warm-ups, collection checks. */
  start?: () => Promise<void>;
  /**
   * Runs once the service listens (`kilde serve`): work that helps the first requests but must not
   * hold up start-up, such as starting the kept extraction workers.
   */
  afterListen?: () => void;
  close?: () => Promise<void>;
}

export interface PartContext {
  /** The bearer check of the main `API_KEY`, as an onRequest hook (per-tenant keys get 403). */
  auth: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  /**
   * The bearer check of a route that takes collection names: the main key and per-tenant keys
   * (src/http/access.ts); the route checks the names with `assertCollectionsAllowed` or narrows to
   * `allowedCollections(request)`.
   */
  scopedAuth: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  /** The per-tenant keys (empty without API_KEYS_FILE / API_KEYS). */
  tenantKeys: readonly TenantKey[];
  /** Per-user access through a trusted platform's headers (USER_ACCESS_FILE / USER_ACCESS), if set. */
  userAccess?: UserAccessPolicy | undefined;
  metrics: Registry;
  config: KernelConfig;
  log: Logger;
}

export interface AppDeps {
  logger: Logger;
  parts: ServicePart[];
  metrics?: Registry;
  /** Max body size of JSON routes without their own (`BODY_LIMITS`); multipart routes set their own. */
  bodyLimit?: number;
  /** Sees every route as it is added, kernel routes included (the OpenAPI coverage test). */
  onRoute?: (route: RouteOptions) => void;
}

/** The app factory: kernel (errors, auth, health, metrics) plus every service part. It does not listen. */
export async function buildApp(config: KernelConfig, deps: AppDeps): Promise<KildeApp> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    bodyLimit: deps.bodyLimit ?? BODY_LIMITS.default,
    routerOptions: { ignoreDuplicateSlashes: true, ignoreTrailingSlash: true },
    return503OnClosing: true,
    // One line per request instead of Fastify's two (see request-line.ts).
    logController: new LogController({ disableRequestLogging: true }),
  }).withTypeProvider<ZodTypeProvider>();

  if (deps.onRoute) app.addHook('onRoute', deps.onRoute);
  // One span per request, parent of its stages' spans (src/telemetry/), only while tracing is on.
  if (tracingActive()) registerRequestSpans(app);
  // Every route takes JSON (or multipart, registered by its part): without this, Fastify's default
  // text/plain parser turns a mislabelled body into a confusing 422 instead of 415.
  app.removeContentTypeParser('text/plain');
  // JSON bodies are read by a parser that also bounds their structure while they stream in, so no
  // body is parsed (or validated) that would hold the event loop longer than a valid one could
  // (src/http/json-body-parser.ts); the parse itself stays Fastify's, proto-poisoning checks included.
  const parseJson = app.getDefaultJsonParser(
    app.initialConfig.onProtoPoisoning ?? 'error',
    app.initialConfig.onConstructorPoisoning ?? 'error',
  );
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', jsonBodyParser(parseJson));
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(makeErrorHandler(config.DEBUG));
  app.setNotFoundHandler((request, reply) =>
    reply
      .status(404)
      .send({ detail: `Not found: ${request.method} ${request.url.split('?')[0]}`, code: 'NOT_FOUND' }),
  );
  app.addHook('onResponse', logRequestLine);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  // Before any route: its hook answers preflights ahead of every route's own hooks (the bearer
  // checks among them), so an `OPTIONS` never needs the key.
  if (config.CORS_ORIGINS.length > 0) await registerCors(app, config.CORS_ORIGINS);

  // Before any route: the document collects routes as they are added (onRoute).
  if (config.OPENAPI_ENABLED) {
    await registerOpenApi(app, deps.parts.map((p) => p.name).join(', ') || 'kernel');
  }

  const metrics = deps.metrics ?? createMetricsRegistry();
  const tenantKeys = loadTenantKeys(config);
  const userAccess = loadUserAccess(config, tenantKeys);
  const hooks = accessHooks(config.API_KEY, tenantKeys, userAccess);
  const auth = hooks.main;
  if (config.METRICS_ENABLED) {
    registerHttpMetrics(app, metrics);
    registerMetricsRoute(app, metrics, auth);
  }
  registerHealth(
    app,
    deps.parts.flatMap((p) => p.probes ?? []),
  );

  const ctx: PartContext = {
    auth,
    scopedAuth: hooks.scoped,
    tenantKeys,
    userAccess,
    metrics,
    config,
    log: deps.logger,
  };
  registerInfoRoute(app, ctx, deps.parts);
  for (const part of deps.parts) {
    await app.register(async (scope) => part.register(scope, ctx), { name: part.name } as never);
  }
  app.addHook('onClose', () => closeParts(deps.parts, deps.logger));
  return app;
}

export { closeParts, startParts } from './part-lifecycle.js';
