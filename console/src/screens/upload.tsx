import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, fileIdFor, type Job, type JobStage, STAGES, TERMINAL } from '../api';
import type { Session } from '../main';
import { href } from '../route';
import { bytes, useLoad } from '../ui';

interface Item {
  id: number;
  file: File;
  fileId: string;
  collection: string;
  job: Job | null;
  /** A failure before or outside the job (refused upload, lost event stream). */
  error: { code: string; message: string } | null;
}

/** Job event streams held at once: a browser keeps about six connections per server. */
const PARALLEL = 3;

/** Files of a drop, folders walked (their files keep the folder path as file_id). */
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
      let job = await session.api.submitJob(item.file, item.fileId, item.collection);
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
      fileId: fileIdFor(file),
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
          Files keep their name (their path inside a dropped folder) as file_id: uploading the same file again
          makes a new version.
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
        {session.info.ingest && (
          <p class="muted">Up to {bytes(session.info.ingest.max_upload_bytes)} per file.</p>
        )}
      </section>
      {notice && (
        <p class="error" role="alert">
          {notice}
        </p>
      )}
      {items.length > 0 && (
        <ul class="uploads" aria-label="Uploads" aria-live="polite">
          {items.map((i) => (
            <UploadRow key={i.id} item={i} />
          ))}
        </ul>
      )}
    </section>
  );
}

function stageIndex(stage: JobStage | null): number {
  if (stage === null) return -1;
  return STAGES.indexOf(stage === 'fetch' ? 'upload' : stage);
}

function UploadRow({ item }: { item: Item }) {
  const job = item.job;
  const error = item.error ?? job?.error ?? null;
  const state = error ? 'failed' : (job?.state ?? 'waiting');
  const current = job?.state === 'done' ? STAGES.length : stageIndex(job?.stage ?? null);
  return (
    <li class={`upload ${state}`} data-file={item.fileId} data-state={state}>
      <div class="upload-head">
        <strong class="wrap">{item.fileId}</strong>
        <span class="muted">{bytes(item.file.size)}</span>
        <span class={`state state-${state}`}>{state}</span>
        {job?.state === 'done' && (
          <a href={href({ name: 'chunks', fileId: item.fileId, collection: item.collection })}>
            {job.result?.chunks_count ?? job.progress.chunks_done} chunks
          </a>
        )}
      </div>
      <ol class="stages" aria-label={`Stages of ${item.fileId}`}>
        {STAGES.map((s, n) => {
          const status =
            n < current
              ? 'done'
              : n === current && job?.state === 'running'
                ? 'active'
                : n === current && state === 'failed'
                  ? 'failed'
                  : 'todo';
          return (
            <li key={s} class={`stage ${status}`} aria-current={status === 'active' ? 'step' : undefined}>
              {s === 'upload' && job?.stage === 'fetch' ? 'fetch' : s}
              {status === 'active' && (s === 'embed' || s === 'sparse' || s === 'write') && job
                ? ` ${job.progress.chunks_done}/${job.progress.chunks_total ?? '?'}`
                : ''}
            </li>
          );
        })}
      </ol>
      {error && (
        <p class="error" role="alert">
          <code class="code">{error.code}</code> {error.message}
        </p>
      )}
    </li>
  );
}
