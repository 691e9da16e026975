import { render } from 'preact';
import { useState } from 'preact/hooks';
import type { Api, Info } from './api';
import { href, useRoute } from './route';
import { Chunks } from './screens/chunks';
import { Collections } from './screens/collections';
import { Documents } from './screens/documents';
import { Search } from './screens/search';
import { SignIn } from './screens/sign-in';
import { Upload } from './screens/upload';
import { storedKey, storeKey } from './session';
import './style.css';

export interface Session {
  api: Api;
  /** `GET /api/v1/info`: what the server allows (search toggles, upload limit). */
  info: Info;
}

function App() {
  const [session, setSession] = useState<Session | null>(null);
  const route = useRoute();
  // The upload screen stays mounted once opened, so its files keep going (and are watched) while
  // the user reads another screen.
  const [uploading, setUploading] = useState<string | null | undefined>(undefined);
  if (route.name === 'upload' && uploading === undefined) setUploading(route.collection);
  const signOut = () => {
    storeKey(null);
    setSession(null);
    setUploading(undefined);
  };
  if (!session) {
    return (
      <SignIn
        initialKey={storedKey()}
        onSignedIn={(api, info) => {
          storeKey(api.key);
          setSession({ api, info });
        }}
      />
    );
  }
  const nav = [
    {
      label: 'Collections',
      to: href({ name: 'collections' }),
      active: ['collections', 'documents', 'chunks'],
    },
    ...(session.info.ingests
      ? [{ label: 'Upload', to: href({ name: 'upload', collection: null }), active: ['upload'] }]
      : []),
    ...(session.info.searches ? [{ label: 'Search', to: href({ name: 'search' }), active: ['search'] }] : []),
  ];
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <strong class="brand">Kilde</strong>
        <nav aria-label="Main">
          <ul>
            {nav.map((n) => (
              <li key={n.label}>
                <a href={n.to} aria-current={n.active.includes(route.name) ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <span class="muted version">
          {session.info.version === 'unknown' ? '' : `v${session.info.version}`}
        </span>
        <button type="button" class="link" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {route.name === 'collections' && <Collections session={session} />}
        {route.name === 'documents' && (
          <Documents key={route.collection} session={session} collection={route.collection} />
        )}
        {route.name === 'chunks' && (
          <Chunks key={route.fileId} session={session} fileId={route.fileId} collection={route.collection} />
        )}
        {uploading !== undefined && (
          <div hidden={route.name !== 'upload'}>
            <Upload session={session} collection={route.name === 'upload' ? route.collection : uploading} />
          </div>
        )}
        {route.name === 'search' && <Search session={session} />}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app') as HTMLElement);
