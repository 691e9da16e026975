import { useEffect, useState } from 'preact/hooks';

/** Hash routes, so every screen is a plain static file for the server (no fallback routing). */
export type Route =
  | { name: 'collections' }
  | { name: 'documents'; collection: string }
  | { name: 'chunks'; fileId: string; collection: string | null }
  | { name: 'upload'; collection: string | null }
  | { name: 'search' };

export function parseRoute(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?');
  const params = new URLSearchParams(query);
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'collections' && parts[1]) return { name: 'documents', collection: parts[1] };
  if (parts[0] === 'documents' && parts[1])
    return { name: 'chunks', fileId: parts[1], collection: params.get('collection') };
  if (parts[0] === 'upload') return { name: 'upload', collection: params.get('collection') };
  if (parts[0] === 'search') return { name: 'search' };
  return { name: 'collections' };
}

export function href(route: Route): string {
  switch (route.name) {
    case 'collections':
      return '#/collections';
    case 'documents':
      return `#/collections/${encodeURIComponent(route.collection)}`;
    case 'chunks':
      return `#/documents/${encodeURIComponent(route.fileId)}${
        route.collection ? `?collection=${encodeURIComponent(route.collection)}` : ''
      }`;
    case 'upload':
      return `#/upload${route.collection ? `?collection=${encodeURIComponent(route.collection)}` : ''}`;
    case 'search':
      return '#/search';
  }
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
