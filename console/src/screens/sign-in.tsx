import { useEffect, useRef, useState } from 'preact/hooks';
import { Api, ApiError, type Info } from '../api';

interface Props {
  initialKey: string | null;
  onSignedIn: (api: Api, info: Info) => void;
}

/** The key is checked with `GET /api/v1/info` (bearer-protected) before anything else is shown. */
export function SignIn({ initialKey, onSignedIn }: Props) {
  const [key, setKey] = useState(initialKey ?? '');
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);

  const attempt = async (candidate: string) => {
    setBusy(true);
    setMessage(null);
    const api = new Api(candidate.trim());
    try {
      onSignedIn(api, await api.signIn());
    } catch (err) {
      setMessage(
        err instanceof ApiError && err.status === 401
          ? 'Wrong API key: the server refused it. Use the key that npm start printed, or the API_KEY the server runs with.'
          : `Could not reach Kilde: ${err instanceof Error ? err.message : String(err)}`,
      );
      setBusy(false);
      input.current?.focus();
    }
  };

  // Once, with the key kept from this tab's session.
  useEffect(() => {
    if (initialKey) void attempt(initialKey);
    else input.current?.focus();
  }, []);

  return (
    <main class="sign-in" id="main">
      <h1>Kilde console</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (key.trim()) void attempt(key);
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          ref={input}
          type="password"
          autoComplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-describedby="key-help"
          aria-invalid={message ? true : undefined}
          required
        />
        <p id="key-help" class="muted">
          Kept in this browser tab only (session storage) and sent as the bearer header.
        </p>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        {message && (
          <p class="error" role="alert">
            {message}
          </p>
        )}
      </form>
    </main>
  );
}
