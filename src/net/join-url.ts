/**
 * Joins a base URL and a relative path without losing the base's path (`/v1` must survive):
 * `joinUrl('http://h/v1', 'chat/completions')` and `joinUrl('http://h/v1/', '/chat/completions')`
 * both give `http://h/v1/chat/completions`.
 */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}
