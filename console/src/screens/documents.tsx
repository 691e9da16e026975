import { useRef, useState } from 'preact/hooks';
import type { DocumentRow, Version } from '../api';
import type { Session } from '../main';
import { href } from '../route';
import { ErrorBox, Show, useLoad, when } from '../ui';

/**
 * A confirmation step for what cannot be undone: a modal dialog whose confirm button does it, and
 * whose Cancel (or Escape) does nothing.
 */
function useConfirm() {
  const dialog = useRef<HTMLDialogElement>(null);
  const [asking, setAsking] = useState<{
    title: string;
    text: string;
    action: string;
    run: () => Promise<void>;
  } | null>(null);
  const ask = (q: NonNullable<typeof asking>) => {
    setAsking(q);
    dialog.current?.showModal();
  };
  const view = (
    <dialog ref={dialog} aria-labelledby="confirm-delete-title" onClose={() => setAsking(null)}>
      <h2 id="confirm-delete-title">{asking?.title}</h2>
      <p>{asking?.text}</p>
      <form method="dialog" class="buttons">
        <button
          type="button"
          class="primary"
          onClick={() => {
            const q = asking;
            dialog.current?.close();
            if (q) void q.run();
          }}
        >
          {asking?.action}
        </button>
        <button type="submit" value="cancel">
          Cancel
        </button>
      </form>
    </dialog>
  );
  return { ask, view };
}

/** A collection's documents; each can open its versions, and a stored version can be restored. */
export function Documents({ session, collection }: { session: Session; collection: string }) {
  const [cursor, setCursor] = useState<string | null>(null);
  const [loaded, reload] = useLoad(
    () => session.api.documents(collection, cursor),
    [session, collection, cursor],
  );
  const [open, setOpen] = useState<string | null>(null);
  const [status, setStatus] = useState<{ ok: boolean; text: string; error?: Error } | null>(null);
  const confirm = useConfirm();
  const act = async (run: () => Promise<string>, failed: string) => {
    try {
      setStatus({ ok: true, text: await run() });
    } catch (err) {
      setStatus({ ok: false, text: failed, error: err instanceof Error ? err : new Error(String(err)) });
    }
  };
  const deleteDocument = (d: DocumentRow) =>
    confirm.ask({
      title: `Delete ${d.name ?? d.file_id}?`,
      text: `Every version of ${d.name ?? d.file_id} (${d.chunks} chunks live), kept ones included, is removed from ${collection}. Search stops finding it. This cannot be undone.`,
      action: 'Delete document',
      run: () =>
        act(async () => {
          const r = await session.api.deleteDocument(collection, d.file_id);
          setOpen(null);
          reload();
          return `Deleted ${d.name ?? d.file_id} (${r.chunks_deleted} chunks).`;
        }, 'Delete failed'),
    });
  const deleteCollection = () =>
    confirm.ask({
      title: `Delete the collection ${collection}?`,
      text: `Every document in ${collection}, with all its versions, is removed. Search stops finding them. This cannot be undone.`,
      action: 'Delete collection',
      run: () =>
        act(async () => {
          const r = await session.api.deleteCollection(collection);
          reload();
          return `Deleted the collection ${collection}: ${r.documents_deleted} documents, ${r.chunks_deleted} chunks.`;
        }, 'Delete failed'),
    });
  return (
    <section aria-labelledby="title">
      <p class="crumbs">
        <a href={href({ name: 'collections' })}>Collections</a> / {collection}
      </p>
      <div class="heading-row">
        <h1 id="title">{collection}</h1>
        <a class="button" href={href({ name: 'upload', collection })}>
          Upload into {collection}
        </a>
        <button type="button" onClick={deleteCollection}>
          Delete collection
        </button>
      </div>
      {status &&
        (status.ok ? (
          <p class="ok" role="status">
            {status.text}
          </p>
        ) : (
          <ErrorBox error={status.error ?? new Error(status.text)} />
        ))}
      {confirm.view}
      <Show loaded={loaded} what="documents">
        {({ documents, next_cursor }) => (
          <>
            {documents.length === 0 ? <p>No documents in this collection.</p> : null}
            <ul class="docs">
              {documents.map((d) => (
                <DocumentItem
                  key={d.file_id}
                  doc={d}
                  session={session}
                  collection={collection}
                  open={open === d.file_id}
                  onToggle={() => setOpen(open === d.file_id ? null : d.file_id)}
                  onRestored={reload}
                  onDelete={() => deleteDocument(d)}
                />
              ))}
            </ul>
            <div class="pager">
              {cursor !== null && (
                <button type="button" onClick={() => setCursor(null)}>
                  First page
                </button>
              )}
              {next_cursor && (
                <button type="button" onClick={() => setCursor(next_cursor)}>
                  Next page
                </button>
              )}
            </div>
          </>
        )}
      </Show>
    </section>
  );
}

interface ItemProps {
  doc: DocumentRow;
  session: Session;
  collection: string;
  open: boolean;
  onToggle: () => void;
  onRestored: () => void;
  onDelete: () => void;
}

function DocumentItem({ doc, session, collection, open, onToggle, onRestored, onDelete }: ItemProps) {
  const panel = `versions-${doc.file_id}`;
  return (
    <li class="doc">
      <div class="doc-row">
        <a class="doc-name" href={href({ name: 'chunks', fileId: doc.file_id, collection })}>
          {doc.name ?? doc.file_id}
        </a>
        <span class="muted">{doc.file_id !== doc.name ? doc.file_id : null}</span>
        <span>
          {doc.chunks} chunk{doc.chunks === 1 ? '' : 's'}
        </span>
        <span>{doc.engine ?? '—'}</span>
        <span>{doc.languages.join(', ') || '—'}</span>
        <span>{when(doc.written_at)}</span>
        <button type="button" aria-expanded={open} aria-controls={panel} onClick={onToggle}>
          {open ? 'Hide versions' : 'Versions'}
          <span class="sr-only"> of {doc.name ?? doc.file_id}</span>
        </button>
        <button type="button" onClick={onDelete} aria-label={`Delete ${doc.name ?? doc.file_id}`}>
          Delete
        </button>
      </div>
      {open && (
        <div id={panel}>
          <Versions session={session} fileId={doc.file_id} collection={collection} onRestored={onRestored} />
        </div>
      )}
    </li>
  );
}

function Versions(props: { session: Session; fileId: string; collection: string; onRestored: () => void }) {
  const { session, fileId, collection } = props;
  const [loaded, reload] = useLoad(
    () => session.api.versions(fileId, collection),
    [session, fileId, collection],
  );
  const [asking, setAsking] = useState<Version | null>(null);
  const [status, setStatus] = useState<{ ok: boolean; text: string; error?: Error } | null>(null);
  const dialog = useRef<HTMLDialogElement>(null);

  const ask = (v: Version) => {
    setAsking(v);
    setStatus(null);
    dialog.current?.showModal();
  };
  const restore = async () => {
    const v = asking;
    dialog.current?.close();
    if (!v) return;
    try {
      const r = await session.api.restore(fileId, v.version, collection);
      setStatus({
        ok: true,
        text: `Restored version ${r.version} (${r.chunks_count} chunks) as the live version.`,
      });
      reload();
      props.onRestored();
    } catch (err) {
      setStatus({
        ok: false,
        text: 'Restore failed',
        error: err instanceof Error ? err : new Error(String(err)),
      });
    }
  };

  return (
    <div class="versions">
      <Show loaded={loaded} what="versions">
        {({ versions, keep_versions }) => (
          <div class="table-wrap">
            {versions.length < 2 && (
              <p class="muted">
                {keep_versions === 0
                  ? 'This server keeps no retired versions (KEEP_VERSIONS=0): a re-ingest replaces the file.'
                  : 'No older version is kept of this file.'}
              </p>
            )}
            <table>
              <caption class="sr-only">Versions of {fileId}</caption>
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">Written</th>
                  <th scope="col" class="num">
                    Chunks
                  </th>
                  <th scope="col">Engine</th>
                  <th scope="col">Source</th>
                  <th scope="col">Content hash</th>
                  <th scope="col">State</th>
                </tr>
              </thead>
              <tbody>
                {versions.map((v) => (
                  <tr key={v.version} class={v.live ? 'live' : undefined}>
                    <td>
                      <code title={v.version}>{short(v.version)}</code>
                    </td>
                    <td>{when(v.written_at)}</td>
                    <td class="num">{v.chunks}</td>
                    <td>{v.engine ?? '—'}</td>
                    <td class="wrap">{v.source ?? '—'}</td>
                    <td>
                      <code title={v.content_hash ?? undefined}>{v.content_hash?.slice(0, 12) ?? '—'}</code>
                    </td>
                    <td>
                      {v.live ? (
                        <strong>live</strong>
                      ) : (
                        <button
                          type="button"
                          aria-label={`Restore version ${v.version}`}
                          onClick={() => ask(v)}
                        >
                          Restore
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Show>
      {status &&
        (status.ok ? (
          <p class="ok" role="status">
            {status.text}
          </p>
        ) : (
          <ErrorBox error={status.error ?? new Error(status.text)} />
        ))}
      <dialog ref={dialog} aria-labelledby={`confirm-${fileId}`} onClose={() => setAsking(null)}>
        <h2 id={`confirm-${fileId}`}>Restore version {short(asking?.version ?? '')}?</h2>
        <p>
          Search will answer from version <code>{asking?.version}</code> of <strong>{fileId}</strong> (
          {asking?.chunks} chunks) instead of the live one. The current version is kept and can be restored
          again.
        </p>
        <form method="dialog" class="buttons">
          <button type="button" class="primary" onClick={() => void restore()}>
            Restore
          </button>
          <button type="submit" value="cancel">
            Cancel
          </button>
        </form>
      </dialog>
    </div>
  );
}

/** Versions are long random ids: the first 12 characters tell them apart on screen. */
function short(version: string): string {
  return version.length > 14 ? `${version.slice(0, 12)}…` : version;
}
