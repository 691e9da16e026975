import { existsSync } from 'node:fs';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply } from 'fastify';
import { KildeError } from '../errors.js';
import type { ServicePart } from './app.js';

/** Where `npm run build:console` (part of `npm ci`) writes the console: `dist/console` of the package. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../dist/console/', import.meta.url));

/**
 * The console's Content-Security-Policy: its own scripts, styles and API only. No inline script or
 * style, no other origin (no CDN, works offline), no framing, no form posts elsewhere.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Vite names every asset by its content hash: such a file never changes under its name. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

function secure(reply: FastifyReply) {
  reply.header('content-security-policy', CONSOLE_CSP);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('x-frame-options', 'DENY');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('cross-origin-opener-policy', 'same-origin');
  reply.header('cross-origin-resource-policy', 'same-origin');
}

/**
 * The web console (docs/console.md) as a service part: the built static files at `/` (index.html,
 * revalidated on every load) and `/assets/*` (hashed, cached for a year), each file a route of its
 * own, so any other path still answers the kernel's JSON 404. The files are public (they hold no
 * data); everything the console shows comes from the bearer-protected API it calls.
 */
export function createConsolePart(dir: string = CONSOLE_DIR): ServicePart {
  return {
    name: 'console',
    async register(app, ctx) {
      if (!existsSync(join(dir, 'index.html'))) {
        ctx.log.warn(
          { dir },
          'the web console is enabled but not built: run `npm run build:console`; GET / answers 503',
        );
        app.get('/', { schema: { hide: true } }, async () => {
          throw new KildeError(
            'CONSOLE_NOT_BUILT',
            'The web console is not built: run npm run build:console',
            { detail: `no ${join(dir, 'index.html')}` },
          );
        });
        return;
      }
      const assets = join(dir, 'assets') + sep;
      await app.register(fastifyStatic, {
        root: dir,
        prefix: '/',
        wildcard: false,
        index: ['index.html'],
        dotfiles: 'ignore',
        // The .gz and .br copies are served in place of their file (preCompressed), not at their own path.
        globIgnore: ['**/*.gz', '**/*.br'],
        preCompressed: true,
        cacheControl: false,
        setHeaders(reply, path) {
          reply.header('cache-control', path.startsWith(assets) ? IMMUTABLE : 'no-cache');
        },
      });
      app.addHook('onSend', async (_request, reply) => {
        secure(reply);
      });
    },
  };
}
