import { createRequire } from 'node:module';

/** A bar on a terminal; cli-progress (CommonJS, 16 modules, ≈11 ms of CPU) loads only for one. */
function progressBar(out: NodeJS.WritableStream) {
  const { Bar, Presets } = createRequire(import.meta.url)('cli-progress') as typeof import('cli-progress');
  return new Bar(
    {
      format:
        ' {bar} {value}/{total} files | {chunks} chunks | {rate} chunks/s | ETA {eta_formatted} | {file}',
      hideCursor: true,
      stream: out as NodeJS.WriteStream,
    },
    Presets.shades_classic,
  );
}

export interface FileOutcome {
  file: string;
  file_id?: string;
  ok: boolean;
  chunks: number;
  ms: number;
  error?: string;
  code?: string;
  /** Unchanged since a run that ingested it (`--url`: the content hash in the job manifest). */
  skipped?: boolean;
  job_id?: string;
}

export interface Summary {
  ok: number;
  failed: number;
  /** Of `ok`, the files skipped as unchanged. */
  skipped: number;
  chunks: number;
  seconds: number;
  failures: FileOutcome[];
}

/**
 * Ingest progress: a bar (files, chunks, throughput, ETA) on a TTY; one JSON line per file
 * otherwise, so scripts and CI logs can parse it.
 */
export function createProgress(total: number, tty: boolean, out: NodeJS.WritableStream = process.stdout) {
  const started = Date.now();
  const outcomes: FileOutcome[] = [];
  let chunks = 0;
  const bar = tty ? progressBar(out) : undefined;
  bar?.start(total, 0, { chunks: 0, rate: '0', file: '' });

  return {
    record(o: FileOutcome) {
      outcomes.push(o);
      chunks += o.chunks;
      const secs = (Date.now() - started) / 1000;
      if (bar)
        bar.increment(1, {
          chunks,
          rate: secs > 0 ? (chunks / secs).toFixed(1) : '0',
          file: o.file.slice(-40),
        });
      else out.write(`${JSON.stringify(o)}\n`);
    },
    /** A file still in flight: what it is doing (a job's state and stage). TTY only. */
    status(file: string, text: string) {
      bar?.update({ file: `${file.slice(-30)} ${text}` });
    },
    finish(): Summary {
      bar?.stop();
      const failures = outcomes.filter((o) => !o.ok);
      return {
        ok: outcomes.length - failures.length,
        failed: failures.length,
        skipped: outcomes.filter((o) => o.skipped).length,
        chunks,
        seconds: Math.round((Date.now() - started) / 100) / 10,
        failures,
      };
    },
  };
}
