import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

export type Loaded<T> =
  | { state: 'loading' }
  | { state: 'error'; error: ApiError | Error }
  | { state: 'ready'; value: T };

/** Runs `load` when `deps` change; `reload` runs it again. Results of superseded runs are dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): [Loaded<T>, () => void] {
  const [result, setResult] = useState<Loaded<T>>({ state: 'loading' });
  const [tick, setTick] = useState(0);
  const reloading = useRef(false);
  useEffect(() => {
    let live = true;
    // A reload keeps showing what is there until the new answer comes (no flash, open panels stay).
    if (!reloading.current) setResult({ state: 'loading' });
    reloading.current = false;
    load().then(
      (value) => live && setResult({ state: 'ready', value }),
      (error: unknown) =>
        live &&
        setResult({ state: 'error', error: error instanceof Error ? error : new Error(String(error)) }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => {
    reloading.current = true;
    setTick((t) => t + 1);
  }, []);
  return [result, reload];
}

/** A failure as the user sees it: code and message, announced to screen readers. */
export function ErrorBox({ error }: { error: ApiError | Error }) {
  return (
    <div class="error" role="alert">
      {error instanceof ApiError ? <code class="code">{error.code}</code> : null} {error.message}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Show<T>({
  loaded,
  what,
  children,
}: {
  loaded: Loaded<T>;
  what: string;
  children: (v: T) => ComponentChildren;
}) {
  if (loaded.state === 'loading') return <Loading what={what} />;
  if (loaded.state === 'error') return <ErrorBox error={loaded.error} />;
  return <>{children(loaded.value)}</>;
}

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
