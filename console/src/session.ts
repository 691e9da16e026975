/**
 * The API key lives in sessionStorage only: gone when the tab closes, never in a cookie (the API
 * accepts none) and never in a URL.
 */
const KEY = 'kilde.apiKey';

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function storeKey(key: string | null): void {
  try {
    if (key === null) sessionStorage.removeItem(KEY);
    else sessionStorage.setItem(KEY, key);
  } catch {
    // Storage refused (private mode): the key stays in memory for this page only.
  }
}
