import { spawn } from 'node:child_process';
import { openAsBlob } from 'node:fs';
import { copyFile, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { type Clock, systemClock } from '../../clock.js';
import { describeCause, type ErrorVariant, KildeError } from '../../errors.js';
import { HttpFailure, httpExchange, readBytes } from '../../net/http.js';
import { joinUrl } from '../../net/join-url.js';
import type { SourceFile } from '../extractor.js';
import { type FileKind, KIND_MIME } from '../file-type.js';

/** Office formats the renderers convert to PDF (Gotenberg and LibreOffice read them all). */
export const OFFICE_KINDS: ReadonlySet<FileKind> = new Set([
  'docx',
  'pptx',
  'xlsx',
  'odt',
  'odp',
  'ods',
  'rtf',
]);

/** Turns an office document into a PDF for the vision engines to rasterise. */
export interface OfficeRenderer {
  /** `gotenberg` (OFFICE_RENDER_URL) or `soffice` (a local LibreOffice). */
  readonly name: string;
  /** Writes the PDF of `file` (an office document of `kind`) into `dir` and returns its path. */
  toPdf(file: SourceFile, kind: FileKind, dir: string, signal?: AbortSignal): Promise<string>;
  close?(): Promise<void>;
}

/** Errors of the renderers: EXTRACTION_FAILED with a message that names no internal address. */
function renderFailed(
  message: string,
  variant?: ErrorVariant<'EXTRACTION_FAILED'>,
  options: { cause?: unknown; detail?: string } = {},
) {
  return new KildeError('EXTRACTION_FAILED', message, { ...options, variant, expose: true });
}

/** The name the renderer sees: LibreOffice picks its import filter from the extension. */
function inputName(kind: FileKind): string {
  return `document.${kind}`;
}

export interface GotenbergOptions {
  baseUrl: string;
  timeoutMs: number;
  /** Largest PDF accepted back. */
  maxBytes: number;
  fetch?: typeof fetch;
  clock?: Clock;
}

/**
 * The office-render sidecar at `OFFICE_RENDER_URL`, speaking Gotenberg's API: `POST
 * /forms/libreoffice/convert` with the document as multipart field `files` (its extension tells
 * LibreOffice the format), the PDF's bytes back. Gotenberg answers 400 when LibreOffice cannot read
 * the document and 503 when the conversion timed out on its side.
 */
export function createGotenbergRenderer(o: GotenbergOptions): OfficeRenderer {
  const url = joinUrl(o.baseUrl, 'forms/libreoffice/convert');
  const tooLarge = () =>
    renderFailed(`Office renderer sent a PDF larger than ${Math.round(o.maxBytes / 1048576)} MiB`);
  return {
    name: 'gotenberg',
    async toPdf(file, kind, dir, signal) {
      const form = new FormData();
      form.append('files', await openAsBlob(file.path, { type: KIND_MIME[kind] }), inputName(kind));
      let answer: Awaited<ReturnType<typeof httpExchange<Uint8Array>>>;
      try {
        answer = await httpExchange(
          {
            url,
            method: 'POST',
            body: form,
            headers: { accept: 'application/pdf' },
            timeoutMs: o.timeoutMs,
            signal,
          },
          readBytes(o.maxBytes, tooLarge),
          { ...(o.fetch ? { fetch: o.fetch } : {}), ...(o.clock ? { clock: o.clock } : {}) },
        );
      } catch (err) {
        if (!(err instanceof HttpFailure)) throw err;
        if (err.kind === 'timeout') {
          throw renderFailed(
            `Office renderer did not answer within ${Math.round(o.timeoutMs / 1000)} s`,
            'upstreamTimeout',
            {
              cause: err,
            },
          );
        }
        throw renderFailed(
          `Office renderer unreachable (${err.networkCode ?? 'no connection'})`,
          'upstreamFailed',
          {
            cause: err,
            detail: describeCause(err),
          },
        );
      }
      if (!answer.ok) {
        const said = new TextDecoder().decode(answer.body.subarray(0, 300)).split('\n')[0]?.trim() ?? '';
        if (answer.status === 400) {
          throw renderFailed(`Office renderer could not convert the document${said ? `: ${said}` : ''}`);
        }
        throw renderFailed(`Office renderer answered HTTP ${answer.status}`, 'upstreamFailed', {
          detail: said,
        });
      }
      if (!isPdf(answer.body))
        throw renderFailed('Office renderer answered with something that is not a PDF', 'upstreamFailed');
      const out = join(dir, 'rendered.pdf');
      await writeFile(out, answer.body);
      return out;
    },
  };
}

export interface LocalOfficeOptions {
  timeoutMs: number;
  /** Largest PDF accepted. */
  maxBytes: number;
  /** Binaries tried in order (found on the PATH); the first that starts is kept. */
  binaries?: readonly string[];
  clock?: Clock;
  log: Logger;
}

/** One LibreOffice at a time in a process: each run takes a core and hundreds of MiB. */
let localQueue: Promise<unknown> = Promise.resolve();
function serially<T>(fn: () => Promise<T>): Promise<T> {
  const run = localQueue.then(fn, fn);
  localQueue = run.catch(() => undefined);
  return run;
}

/**
 * A local LibreOffice (`soffice`, else `libreoffice`) run headless, one conversion at a time, in
 * its own process group so a time-out stops it and its `soffice.bin` child together. Its user
 * profile lives in a private temporary directory, made on first use and reused (a fresh profile
 * costs seconds per run), removed on `close()`.
 */
export function createLocalOfficeRenderer(o: LocalOfficeOptions): OfficeRenderer {
  const clock = o.clock ?? systemClock;
  const candidates = [...(o.binaries ?? ['soffice', 'libreoffice'])];
  let profile: Promise<string> | undefined;
  let found: string | undefined;

  async function convert(bin: string, input: string, dir: string, profileDir: string, signal?: AbortSignal) {
    const args = [
      '--headless',
      '--norestore',
      '--nologo',
      '--nolockcheck',
      '--nodefault',
      `-env:UserInstallation=${pathToFileURL(profileDir).href}`,
      '--convert-to',
      'pdf',
      '--outdir',
      dir,
      input,
    ];
    return new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      signal?.throwIfAborted();
      const child = spawn(bin, args, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (s: string) => {
        if (stderr.length < 4000) stderr += s;
      });
      const stop = (why: Error) => {
        if (child.pid !== undefined) {
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
        reject(why);
      };
      const timer = clock.schedule(
        () =>
          stop(
            renderFailed(
              `LibreOffice did not convert the document within ${Math.round(o.timeoutMs / 1000)} s`,
              'upstreamTimeout',
            ),
          ),
        o.timeoutMs,
      );
      const onAbort = () => stop(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      child.once('error', (err) => {
        timer.cancel();
        signal?.removeEventListener('abort', onAbort);
        reject(err);
      });
      child.once('close', (code) => {
        timer.cancel();
        signal?.removeEventListener('abort', onAbort);
        resolve({ code, stderr });
      });
    });
  }

  return {
    name: 'soffice',
    async toPdf(file, kind, dir, signal) {
      const input = join(dir, inputName(kind));
      await copyFile(file.path, input);
      profile ??= mkdtemp(join(tmpdir(), 'kilde-soffice-'));
      const profileDir = await profile;
      const { code, stderr } = await serially(async () => {
        for (const bin of found ? [found] : candidates) {
          try {
            const result = await convert(bin, input, dir, profileDir, signal);
            found = bin;
            return result;
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
          }
        }
        throw renderFailed(
          'No office renderer: set OFFICE_RENDER_URL (a Gotenberg) or install LibreOffice (soffice) to render office documents for the vision engines',
          'crashed',
        );
      });
      const out = join(dir, 'document.pdf');
      const size = await stat(out).then(
        (s) => s.size,
        () => undefined,
      );
      if (code !== 0 || size === undefined) {
        o.log.warn({ code, stderr: stderr.slice(0, 500) }, 'LibreOffice conversion failed');
        throw renderFailed(`LibreOffice could not convert the document (exit ${code ?? 'signal'})`);
      }
      if (size > o.maxBytes) {
        throw renderFailed(`LibreOffice made a PDF larger than ${Math.round(o.maxBytes / 1048576)} MiB`);
      }
      return out;
    },
    async close() {
      if (profile) await rm(await profile, { recursive: true, force: true });
    },
  };
}

function isPdf(bytes: Uint8Array): boolean {
  return new TextDecoder('latin1').decode(bytes.subarray(0, 1024)).includes('%PDF-');
}
