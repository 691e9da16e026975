/*
 * The OpenTelemetry semantic-convention attribute names Kilde's spans use (all stable), spelled
 * out here so that the modules every process loads do not load `@opentelemetry/semantic-conventions`
 * (≈ 140 KB of JavaScript, 13–24 ms of CPU at start-up, for a dozen strings);
 * test/telemetry/lean.test.ts checks each against the package's constant.
 */
export const ATTR_CLIENT_ADDRESS = 'client.address';
export const ATTR_ERROR_TYPE = 'error.type';
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
export const ATTR_HTTP_REQUEST_RESEND_COUNT = 'http.request.resend_count';
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
export const ATTR_HTTP_ROUTE = 'http.route';
export const ATTR_NETWORK_PROTOCOL_VERSION = 'network.protocol.version';
export const ATTR_SERVER_ADDRESS = 'server.address';
export const ATTR_SERVER_PORT = 'server.port';
export const ATTR_URL_FULL = 'url.full';
export const ATTR_URL_PATH = 'url.path';
export const ATTR_URL_SCHEME = 'url.scheme';
export const ATTR_USER_AGENT_ORIGINAL = 'user_agent.original';
