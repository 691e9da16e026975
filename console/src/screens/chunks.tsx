import { useEffect, useState } from 'preact/hooks';
import type { ChunkPage } from '../api';
import type { Session } from '../main';
import { href } from '../route';
import { ErrorBox, Loading } from '../ui';

type Chunk = ChunkPage['chunks'][number];

/** A document's chunks in reading order (split_id), every page of the inspection API read. */
export function Chunks({
  session,
  fileId,
  collection,
}: {
  session: Session;
  fileId: string;
  collection: string | null;
}) {
  const [pages, setPages] = useState<{ stats: ChunkPage['stats']; chunks: Chunk[] } | null>(null);
  const [error, setError] = useState<Error | null>(null);
  useEffect(() => {
    let live = true;
    setPages(null);
    setError(null);
    (async () => {
      const all: Chunk[] = [];
      let offset: string | undefined;
      let stats: ChunkPage['stats'] | undefined;
      // Bounded: 50 pages of 200 chunks are far more than a reader scrolls through.
      for (let i = 0; i < 50; i++) {
        const page = await session.api.chunks(fileId, offset);
        stats ??= page.stats;
        all.push(...page.chunks);
        if (!page.next_offset) break;
        offset = page.next_offset;
      }
      all.sort((a, b) => a.split_id - b.split_id);
      if (live && stats) setPages({ stats, chunks: all });
    })().catch((err: unknown) => live && setError(err instanceof Error ? err : new Error(String(err))));
    return () => {
      live = false;
    };
  }, [session, fileId]);

  const name = pages?.stats.name ?? fileId;
  const coll = collection ?? pages?.stats.collection_name ?? null;
  return (
    <section aria-labelledby="title">
      <p class="crumbs">
        <a href={href({ name: 'collections' })}>Collections</a>
        {coll && (
          <>
            {' / '}
            <a href={href({ name: 'documents', collection: coll })}>{coll}</a>
          </>
        )}{' '}
        / {name}
      </p>
      <h1 id="title">{name}</h1>
      {error && <ErrorBox error={error} />}
      {!pages && !error && <Loading what="chunks" />}
      {pages && (
        <>
          <dl class="stats">
            <dt>Chunks</dt>
            <dd>{pages.stats.total_chunks}</dd>
            <dt>Engine</dt>
            <dd>{pages.stats.extraction_engine ?? '—'}</dd>
            <dt>Languages</dt>
            <dd>{pages.stats.languages.join(', ') || '—'}</dd>
          </dl>
          <ol class="chunks">
            {pages.chunks.map((c) => (
              <ChunkCard key={c.split_id} chunk={c} />
            ))}
          </ol>
        </>
      )}
    </section>
  );
}

function ChunkCard({ chunk }: { chunk: Chunk }) {
  const m = chunk.meta;
  const pages =
    m.pages && m.pages.length > 1
      ? `pages ${m.pages.join(', ')}`
      : m.page_number
        ? `page ${m.page_number}`
        : null;
  const engine = String(m.extraction_engine ?? m.extractor ?? '') || null;
  // The engine `auto` routed to, when it differs from the configured one.
  const route =
    typeof m.extraction_route === 'string'
      ? m.extraction_route
      : m.extractor && m.extractor !== engine
        ? m.extractor
        : null;
  return (
    <li class="chunk" aria-label={`Chunk ${chunk.split_id}`}>
      <div class="chunk-head">
        <span class="chip">#{chunk.split_id}</span>
        {m.headers && m.headers.length > 0 && (
          <nav class="breadcrumb" aria-label="Headings">
            {m.headers.join(' › ')}
          </nav>
        )}
      </div>
      <pre class="chunk-text">{chunk.content ?? ''}</pre>
      <p class="chunk-meta muted">
        {pages && <span>{pages}</span>}
        {m.char_start !== undefined && m.char_end !== undefined && (
          <span>
            chars {m.char_start}–{m.char_end}
          </span>
        )}
        {engine && <span>engine {engine}</span>}
        {route && <span>route {route}</span>}
        {m.vision_profile && <span>profile {m.vision_profile}</span>}
        {m.languages && m.languages.length > 0 && <span>languages {m.languages.join(', ')}</span>}
        <span>{chunk.content_length} characters</span>
      </p>
    </li>
  );
}
