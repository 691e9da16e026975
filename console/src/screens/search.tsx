import { useState } from 'preact/hooks';
import type { Explanation, SearchRequest, SearchResponse } from '../api';
import type { Session } from '../main';
import { href } from '../route';
import { ErrorBox, Show, useLoad } from '../ui';

type Toggle = 'hybrid' | 'rerank' | 'agentic';
const TOGGLES: { key: Toggle; label: string }[] = [
  { key: 'hybrid', label: 'Hybrid (dense + lexical)' },
  { key: 'rerank', label: 'Rerank' },
  { key: 'agentic', label: 'Agentic' },
];

/** `POST /search` with `explain: true`: hits with their score, why each ranked there, stage timings. */
export function Search({ session }: { session: Session }) {
  const [collections] = useLoad(() => session.api.collections(), [session]);
  const available = session.info.search.modes_available;
  const [query, setQuery] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [k, setK] = useState(session.info.search.default_k);
  const [pipeline, setPipeline] = useState<Record<Toggle, boolean>>({ ...available });
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ request: SearchRequest; response: SearchResponse } | null>(null);
  const [error, setError] = useState<Error | null>(null);

  const submit = async () => {
    setBusy(true);
    setError(null);
    const request: SearchRequest = {
      queries: [query],
      collection_names: chosen,
      k,
      explain: true,
      pipeline: Object.fromEntries(
        TOGGLES.filter((t) => available[t.key]).map((t) => [t.key, pipeline[t.key]]),
      ),
    };
    try {
      setResult({ request, response: await session.api.search(request) });
    } catch (err) {
      setResult(null);
      setError(err instanceof Error ? err : new Error(String(err)));
    } finally {
      setBusy(false);
    }
  };

  const offered = TOGGLES.filter((t) => available[t.key]);
  return (
    <section aria-labelledby="title">
      <h1 id="title">Search</h1>
      <form
        class="search-form"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <div class="field wide">
          <label for="query">Query</label>
          <input
            id="query"
            type="search"
            value={query}
            onInput={(e) => setQuery(e.currentTarget.value)}
            required
          />
        </div>
        <fieldset>
          <legend>Collections</legend>
          {collections.state === 'error' ? (
            // No listing on this server (e.g. `serve retrieve` alone): the names are typed in.
            <div class="field">
              <label for="collection-names">Collection names, separated by commas</label>
              <input
                id="collection-names"
                value={chosen.join(', ')}
                onInput={(e) =>
                  setChosen(
                    e.currentTarget.value
                      .split(',')
                      .map((n) => n.trim())
                      .filter(Boolean),
                  )
                }
              />
            </div>
          ) : (
            <Show loaded={collections} what="collections">
              {({ collections: list }) =>
                list.length === 0 ? (
                  <p class="muted">No collections to search.</p>
                ) : (
                  list.map((c) => (
                    <label key={c.name} class="check">
                      <input
                        type="checkbox"
                        checked={chosen.includes(c.name)}
                        onChange={(e) =>
                          setChosen(
                            e.currentTarget.checked
                              ? [...chosen, c.name]
                              : chosen.filter((n) => n !== c.name),
                          )
                        }
                      />{' '}
                      {c.name}
                    </label>
                  ))
                )
              }
            </Show>
          )}
        </fieldset>
        <div class="field">
          <label for="k">Results (k)</label>
          <input
            id="k"
            type="number"
            min={1}
            max={session.info.search.max_k}
            value={k}
            onInput={(e) => setK(Number(e.currentTarget.value) || 1)}
          />
        </div>
        {offered.length > 0 && (
          <fieldset>
            <legend>Pipeline</legend>
            {offered.map((t) => (
              <label key={t.key} class="check">
                <input
                  type="checkbox"
                  checked={pipeline[t.key]}
                  onChange={(e) => setPipeline({ ...pipeline, [t.key]: e.currentTarget.checked })}
                />{' '}
                {t.label}
              </label>
            ))}
          </fieldset>
        )}
        <div class="buttons">
          <button type="submit" class="primary" disabled={busy || chosen.length === 0 || !query.trim()}>
            {busy ? 'Searching…' : 'Search'}
          </button>
          {chosen.length === 0 && <span class="muted">Choose at least one collection.</span>}
        </div>
      </form>
      {error && <ErrorBox error={error} />}
      {result && <Results {...result} />}
    </section>
  );
}

function Results({ response }: { request: SearchRequest; response: SearchResponse }) {
  const docs = response.documents[0] ?? [];
  const metas = response.metadatas[0] ?? [];
  const scores = response.distances[0] ?? [];
  const why = response.explanations?.[0] ?? [];
  const timings = response.timings_ms;
  return (
    <section aria-labelledby="results-title" class="results">
      <h2 id="results-title">
        {docs.length} result{docs.length === 1 ? '' : 's'}
      </h2>
      {timings && (
        <dl class="timings" aria-label="Stage timings">
          {Object.entries(timings).map(([stage, ms]) => (
            <div key={stage}>
              <dt>{stage}</dt>
              <dd>{ms.toFixed(1)} ms</dd>
            </div>
          ))}
        </dl>
      )}
      <ol class="hits">
        {docs.map((text, i) => {
          const meta = metas[i] ?? {};
          const fileId = typeof meta.file_id === 'string' ? meta.file_id : null;
          const collection = typeof meta.collection_name === 'string' ? meta.collection_name : null;
          const name = typeof meta.name === 'string' ? meta.name : fileId;
          const headers = Array.isArray(meta.headers) ? (meta.headers as string[]) : [];
          const page = typeof meta.page_number === 'number' ? meta.page_number : null;
          const explanation = why[i];
          return (
            <li key={i} class="hit">
              <div class="hit-head">
                <span class="chip">{i + 1}</span>
                {fileId ? (
                  <a href={href({ name: 'chunks', fileId, collection })}>{name}</a>
                ) : (
                  <span>{name}</span>
                )}
                {page !== null && <span class="muted">page {page}</span>}
                <span class="score">score {(scores[i] ?? 0).toFixed(4)}</span>
              </div>
              {headers.length > 0 && <p class="breadcrumb">{headers.join(' › ')}</p>}
              <p class="hit-text">{text.length > 600 ? `${text.slice(0, 600)}…` : text}</p>
              {explanation && <Why explanation={explanation} />}
            </li>
          );
        })}
      </ol>
    </section>
  );
}

const num = (n: number | null | undefined, digits = 4) =>
  n === null || n === undefined ? '—' : n.toFixed(digits);

function Why({ explanation: e }: { explanation: Explanation }) {
  return (
    <details class="why">
      <summary>Why this rank ({e.path})</summary>
      <table>
        <tbody>
          <tr>
            <th scope="row">Path</th>
            <td>{e.path}</td>
          </tr>
          <tr>
            <th scope="row">Dense</th>
            <td>
              {e.dense
                ? `rank ${e.dense.rank}, score ${num(e.dense.score)}`
                : e.path === 'lexical'
                  ? 'not searched (lexical only)'
                  : 'not among this branch’s hits'}
            </td>
          </tr>
          <tr>
            <th scope="row">Lexical</th>
            <td>
              {e.lexical
                ? `rank ${e.lexical.rank}, score ${num(e.lexical.score)}`
                : e.path === 'dense'
                  ? 'not searched (dense only)'
                  : 'not among this branch’s hits'}
            </td>
          </tr>
          <tr>
            <th scope="row">Fused</th>
            <td>{num(e.fused)}</td>
          </tr>
          <tr>
            <th scope="row">Rerank</th>
            <td>{num(e.rerank)}</td>
          </tr>
          <tr>
            <th scope="row">Final score</th>
            <td>{num(e.score)}</td>
          </tr>
        </tbody>
      </table>
    </details>
  );
}
