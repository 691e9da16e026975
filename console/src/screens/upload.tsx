import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Info, type Job, type JobStage, pathOf, STAGES, TERMINAL } from '../api';
import type { Session } from '../main';
import { href } from '../route';
import { bytes, useLoad } from '../ui';

interface Item {
  id: number;
  file: File;
  /** The path the file is named by (its file_id is the server's: `job.file_id`). */
  path: string;
  collection: string;
  job: Job | null;
  /** A failure before or outside the job (refused upload, lost event stream). */
  error: { code: string; message: string } | null;
}

/** Job event streams held at once: a browser keeps about six connections per server. */
const PARALLEL = 3;

/** Files of a drop, folders walked (their files keep the folder path as their path). */
async function droppedFiles(data: DataTransfer): Promise<File[]> {
  const entries = [...data.items]
    .map((i) => (i.kind === 'file' ? i.webkitGetAsEntry() : null))
    .filter((e): e is FileSystemEntry => e !== null);
  if (entries.length === 0) return [...data.files];
  const out: File[] = [];
  const walk = async (entry: FileSystemEntry, prefix: string): Promise<void> => {
    if (entry.isFile) {
      const file = await new Promise<File>((resolve, reject) =>
        (entry as FileSystemFileEntry).file(resolve, reject),
      );
      out.push(prefix ? withPath(file, `${prefix}${file.name}`) : file);
    } else if (entry.isDirectory) {
      const reader = (entry as FileSystemDirectoryEntry).createReader();
      for (;;) {
        const batch = await new Promise<FileSystemEntry[]>((resolve, reject) =>
          reader.readEntries(resolve, reject),
        );
        if (batch.length === 0) break;
        for (const child of batch) await walk(child, `${prefix}${entry.name}/`);
      }
    }
  };
  for (const e of entries) await walk(e, '');
  return out;
}

function withPath(file: File, path: string): File {
  Object.defineProperty(file, 'webkitRelativePath', { value: path });
  return file;
}

export function Upload({ session, collection: initial }: { session: Session; collection: string | null }) {
  const [collections] = useLoad(() => session.api.collections(), [session]);
  const [collection, setCollection] = useState(initial ?? '');
  // "Upload into …" from a collection's page names the collection.
  useEffect(() => {
    if (initial) setCollection(initial);
  }, [initial]);
  const [items, setItems] = useState<Item[]>([]);
  const [over, setOver] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const queue = useRef<Item[]>([]);
  const running = useRef(0);
  const nextId = useRef(1);
  const aborts = useRef(new AbortController());
  useEffect(() => () => aborts.current.abort(), []);

  const update = (id: number, change: Partial<Item>) =>
    setItems((all) => all.map((i) => (i.id === id ? { ...i, ...change } : i)));

  const run = async (item: Item) => {
    try {
      let job = await session.api.submitJob(item.file, item.path, item.collection);
      update(item.id, { job });
      // A stream cut before the job ended (a proxy's idle time-out, a restart) is followed again.
      for (let attempt = 0; !TERMINAL.includes(job.state); attempt++) {
        if (attempt === 5) throw new Error('the job event stream kept closing before the job ended');
        await session.api.watchJob(
          job.job_id,
          (j) => {
            job = j;
            update(item.id, { job: j });
          },
          aborts.current.signal,
        );
      }
    } catch (err) {
      if (aborts.current.signal.aborted) return;
      update(item.id, {
        error:
          err instanceof ApiError
            ? { code: err.code, message: err.message }
            : { code: 'NETWORK', message: err instanceof Error ? err.message : String(err) },
      });
    }
  };
  const pump = () => {
    while (running.current < PARALLEL && queue.current.length > 0) {
      const item = queue.current.shift() as Item;
      running.current++;
      void run(item).finally(() => {
        running.current--;
        pump();
      });
    }
  };

  const add = (files: File[]) => {
    const target = collection.trim();
    if (!target) {
      setNotice('Choose a collection first.');
      return;
    }
    const max = session.info.ingest?.max_upload_bytes;
    setNotice(null);
    const added: Item[] = files.map((file) => ({
      id: nextId.current++,
      file,
      path: pathOf(file),
      collection: target,
      job: null,
      error:
        max !== undefined && file.size > max
          ? {
              code: 'INVALID_REQUEST',
              message: `File is ${bytes(file.size)}; the server takes at most ${bytes(max)}`,
            }
          : null,
    }));
    setItems((all) => [...added, ...all]);
    queue.current.push(...added.filter((i) => i.error === null));
    pump();
  };

  const names = collections.state === 'ready' ? collections.value.collections.map((c) => c.name) : [];
  return (
    <section aria-labelledby="upload-title">
      <h1 id="upload-title">Upload</h1>
      <div class="upload-form">
        <label for="collection">Collection</label>
        <input
          id="collection"
          list="collection-names"
          value={collection}
          onInput={(e) => setCollection(e.currentTarget.value)}
          placeholder="existing or new collection name"
          aria-describedby="collection-help"
          required
        />
        <datalist id="collection-names">
          {names.map((n) => (
            <option key={n} value={n} />
          ))}
        </datalist>
        <p id="collection-help" class="muted">
          A file is named by its name (its path inside a dropped folder): uploading the same file again, or
          one the CLI ingested, makes a new version of it.
        </p>
      </div>
      <section
        aria-label="Drop zone: drop files or folders to upload them"
        class={`drop${over ? ' over' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => {
          e.preventDefault();
          setOver(false);
          if (e.dataTransfer) void droppedFiles(e.dataTransfer).then(add);
        }}
      >
        <p>Drop files or folders here, or</p>
        <label class="button" for="file-picker">
          Choose files
        </label>
        <input
          id="file-picker"
          class="visually-hidden-input"
          type="file"
          multiple
          onChange={(e) => {
            add([...(e.currentTarget.files ?? [])]);
            e.currentTarget.value = '';
          }}
        />
        {session.info.ingest && <Limits ingest={session.info.ingest} />}
      </section>
      {notice && (
        <p class="error" role="alert">
          {notice}
        </p>
      )}
      {items.length > 0 && (
        <ul class="uploads" aria-label="Uploads" aria-live="polite">
          {items.map((i) => (
            <UploadRow key={i.id} item={i} info={session.info} />
          ))}
        </ul>
      )}
    </section>
  );
}

/** The limits as the server enforces them: bytes of the upload, then characters of its text. */
function Limits({ ingest }: { ingest: NonNullable<Info['ingest']> }) {
  return (
    <p class="muted" data-testid="limits">
      Up to {bytes(ingest.max_upload_bytes)} per file
      {ingest.max_text_chars !== undefined && (
        <>
          {' '}
          and {ingest.max_text_chars.toLocaleString('en')} characters of extracted text (a file under the byte
          limit whose text has more still fails)
        </>
      )}
      .
    </p>
  );
}

function stageIndex(stage: JobStage | null | undefined): number {
  if (stage === null || stage === undefined) return -1;
  return STAGES.indexOf(stage === 'fetch' ? 'upload' : stage);
}

/** What the server's pipeline does not run: no embedder (lexical-only), no sparse vectors. */
function skippedStages(info: Info): ReadonlySet<JobStage> {
  const skipped = new Set<JobStage>();
  if (info.ingest?.dense === false) skipped.add('embed');
  if (info.ingest?.sparse === false) skipped.add('sparse');
  return skipped;
}

/** Stage names as a person reads them (the wire's `convert` and `write`). */
const STAGE_LABEL: Record<JobStage, string> = {
  fetch: 'fetch',
  upload: 'upload',
  convert: 'extract',
  chunk: 'chunk',
  embed: 'embed',
  sparse: 'sparse',
  write: 'index',
};

function UploadRow({ item, info }: { item: Item; info: Info }) {
  const job = item.job;
  const error = item.error ?? job?.error ?? null;
  const state = error ? 'failed' : (job?.state ?? 'waiting');
  // A failed job names the stage it failed in (`error.stage`); a refused upload failed at upload.
  const failedAt =
    state !== 'failed' ? -1 : item.error ? 0 : stageIndex(job?.error?.stage ?? job?.stage ?? null);
  const current = job?.state === 'done' ? STAGES.length : failedAt >= 0 ? failedAt : stageIndex(job?.stage);
  const skipped = skippedStages(info);
  const name = item.path;
  return (
    <li class={`upload ${state}`} data-file={name} data-state={state}>
      <div class="upload-head">
        <strong class="wrap">{name}</strong>
        <span class="muted">{bytes(item.file.size)}</span>
        <span class={`state state-${state}`}>{state}</span>
        {job?.state === 'done' && (
          <a href={href({ name: 'chunks', fileId: job.file_id, collection: item.collection })}>
            {job.result?.chunks_count ?? job.progress.chunks_done} chunks
          </a>
        )}
      </div>
      <ol class="stages" aria-label={`Stages of ${name}`}>
        {STAGES.map((s, n) => {
          const status = skipped.has(s)
            ? 'skipped'
            : n < current
              ? 'done'
              : n === current && job?.state === 'running'
                ? 'active'
                : n === current && state === 'failed'
                  ? 'failed'
                  : 'todo';
          return (
            <li
              key={s}
              class={`stage ${status}`}
              data-stage={s}
              aria-current={status === 'active' ? 'step' : undefined}
              title={
                status === 'skipped'
                  ? s === 'embed'
                    ? 'skipped: no embedding model is configured (lexical-only search)'
                    : 'skipped: sparse vectors are off'
                  : undefined
              }
            >
              {s === 'upload' && job?.stage === 'fetch' ? 'fetch' : STAGE_LABEL[s]}
              {status === 'skipped' ? ' (skipped)' : ''}
              {status === 'active' && (s === 'embed' || s === 'sparse' || s === 'write') && job
                ? ` ${job.progress.chunks_done}/${job.progress.chunks_total ?? '?'}`
                : ''}
            </li>
          );
        })}
      </ol>
      {error && (
        <p class="error" role="alert">
          {failedAt >= 0 && (
            <>
              Failed at <strong class="failed-stage">{STAGE_LABEL[STAGES[failedAt] ?? 'upload']}</strong>:{' '}
            </>
          )}
          <code class="code">{error.code}</code> {error.message}
        </p>
      )}
    </li>
  );
}
