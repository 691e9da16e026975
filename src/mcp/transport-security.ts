import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendJsonRpcError } from './json-rpc.js';

/**
 * DNS-rebinding protection for `/mcp`, answered with the reference tool server's status codes:
 * Host not allowed → 421, Origin not allowed → 403, POST without `application/json` → 400.
 * The SDK can check Host/Origin itself but answers 403 for both and 415 for the media type, so
 * its checks stay off and this hook runs first (onRequest: before body parsing and the SDK).
 */
export interface TransportSecurity {
  /** Host patterns; empty = Host checking off. */
  allowedHosts: readonly string[];
  /** Origin patterns (`scheme://host[:port|:*]`). */
  allowedOrigins: readonly string[];
}

/**
 * A browser sends an IP literal in Host only when the page itself was loaded from that IP, so a
 * rebinding attacker (whose page has its own domain name) can never produce these: `localhost`
 * therefore also admits the loopback literals that local tools (Inspector, curl) use.
 */
const LOOPBACK_ALIASES: Readonly<Record<string, readonly string[]>> = {
  localhost: ['localhost', '127.0.0.1', '[::1]'],
};

interface HostPort {
  hostname: string;
  /** '' when the header names no port. */
  port: string;
}

/** Splits `host[:port]`, keeping IPv6 brackets (`[::1]:8000`). */
function splitHostPort(value: string): HostPort | undefined {
  const v = value.trim().toLowerCase();
  if (v === '') return undefined;
  const m = v.startsWith('[')
    ? /^(\[[0-9a-f:.]+\])(?::([^:]*))?$/.exec(v)
    : /^([^:[\]]+)(?::([^:]*))?$/.exec(v);
  if (!m) return undefined;
  return { hostname: m[1]!, port: m[2] ?? '' };
}

/** `tools:*` matches any port (or none); `tools:8000` only that port; `tools` only no port. */
export function hostAllowed(hostHeader: string | undefined, patterns: readonly string[]): boolean {
  if (patterns.length === 0) return true;
  if (hostHeader === undefined) return false;
  const given = splitHostPort(hostHeader);
  if (!given) return false;
  return patterns.some((pattern) => {
    const p = splitHostPort(pattern);
    if (!p) return false;
    const names = LOOPBACK_ALIASES[p.hostname] ?? [p.hostname];
    return names.includes(given.hostname) && (p.port === '*' || p.port === given.port);
  });
}

/** Default origins: `http://` and `https://` in front of every allowed host pattern. */
export function originsFromHosts(hosts: readonly string[]): string[] {
  return hosts.flatMap((h) => [`http://${h}`, `https://${h}`]);
}

export function originAllowed(origin: string, patterns: readonly string[]): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // includes the opaque origin "null"
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  // URL drops a default port; a pattern may name it (`api.example.com:443`) or not.
  const defaultPort = url.protocol === 'https:' ? '443' : '80';
  const given =
    url.port === '' ? [url.hostname, `${url.hostname}:${defaultPort}`] : [`${url.hostname}:${url.port}`];
  return patterns.some((pattern) => {
    const i = pattern.indexOf('://');
    if (i < 0) return false;
    const scheme = `${pattern.slice(0, i).toLowerCase()}:`;
    return scheme === url.protocol && given.some((g) => hostAllowed(g, [pattern.slice(i + 3)]));
  });
}

export function isJsonContentType(value: string | undefined): boolean {
  return value?.split(';')[0]?.trim().toLowerCase() === 'application/json';
}

/** The onRequest hook in front of `/mcp`. */
export function transportSecurityHook(s: TransportSecurity) {
  return async function checkTransport(request: FastifyRequest, reply: FastifyReply) {
    const host = request.headers.host;
    if (!hostAllowed(host, s.allowedHosts)) {
      request.log.info({ host }, 'mcp: rejected Host (DNS-rebinding protection)');
      return sendJsonRpcError(reply, 421, -32000, `Invalid Host header: ${host ?? '(none)'}`);
    }
    const origin = request.headers.origin;
    if (origin !== undefined && !originAllowed(origin, s.allowedOrigins)) {
      request.log.info({ origin }, 'mcp: rejected Origin');
      return sendJsonRpcError(reply, 403, -32000, `Invalid Origin header: ${origin}`);
    }
    if (request.method === 'POST' && !isJsonContentType(request.headers['content-type'])) {
      return sendJsonRpcError(reply, 400, -32000, 'Bad Request: Content-Type must be application/json');
    }
  };
}
