import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderErrorDocs } from '../scripts/errors-doc.js';
import {
  describeCause,
  ERRORS,
  type ErrorCode,
  type ErrorSpec,
  type ErrorVariant,
  isRetryable,
  KildeError,
  revive,
  statusesOf,
  variantFor,
} from '../src/errors.js';

describe('the error table', () => {
  it('docs/errors.md is up to date (run `npm run docs:errors`)', () => {
    const committed = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
    expect(committed).toBe(renderErrorDocs());
  });

  it('binds each code to its status, and each of its variants to theirs', () => {
    for (const [code, spec] of Object.entries(ERRORS) as [ErrorCode, ErrorSpec][]) {
      const e = new KildeError(code, 'x');
      expect(e.statusCode).toBe(spec.status);
      expect(e.retryable).toBe(spec.retryable);
      for (const [variant, status] of Object.entries(spec.variants ?? {})) {
        expect(new KildeError(code, 'x', { variant: variant as ErrorVariant }).statusCode).toBe(status);
        expect(variantFor(code, status)).toBe(variant);
      }
      expect(new Set(statusesOf(code)).size, `${code}: one variant per status`).toBe(statusesOf(code).length);
    }
  });

  it('takes the status from the named variant, never a number, and refuses a variant the code lacks', () => {
    expect(new KildeError('INVALID_REQUEST', 'too big', { variant: 'tooLarge' }).statusCode).toBe(413);
    // @ts-expect-error UNAUTHORIZED has no variants
    expect(() => new KildeError('UNAUTHORIZED', 'x', { variant: 'tooLarge' })).toThrow(
      /UNAUTHORIZED has no variant tooLarge/,
    );
  });

  it('revives an error that crossed a process boundary with its status', () => {
    const e = revive({ code: 'EXTRACTION_FAILED', status: 504, message: 'sidecar did not answer' });
    expect([e.code, e.variant, e.statusCode, e.message]).toEqual([
      'EXTRACTION_FAILED',
      'upstreamTimeout',
      504,
      'sidecar did not answer',
    ]);
    expect(revive({ code: 'INTERNAL', status: 500, message: 'x' }).statusCode).toBe(500);
  });

  it('hides a 5xx message unless it was written for clients; 4xx are always shown', () => {
    expect(new KildeError('EMBEDDING_FAILED', 'POST http://10.0.0.1/embed: 500').publicMessage).toBe(
      'Embedding failed',
    );
    expect(new KildeError('LLM_TIMEOUT', 'no answer within 1 s', { expose: true }).publicMessage).toBe(
      'no answer within 1 s',
    );
    expect(new KildeError('EXTRACTION_FAILED', 'PDF has 20001 pages').publicMessage).toBe(
      'PDF has 20001 pages',
    );
  });

  it('lets an adapter mark one failure retryable, read without knowing its class', () => {
    class AdapterError extends Error {
      readonly retryable = true;
    }
    expect(isRetryable(new AdapterError('503'))).toBe(true);
    expect(isRetryable(new KildeError('VECTORDB_FAILED', 'refused', { retryable: false }))).toBe(false);
    expect(isRetryable(new KildeError('NOT_READY', 'starting'))).toBe(true);
    expect(isRetryable(new Error('plain'))).toBe(false);
  });

  it('describes a cause chain down to the innermost reason, once each', () => {
    const inner = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    const outer = new TypeError('fetch failed', { cause: inner });
    expect(describeCause(new Error('index unreachable', { cause: outer }))).toBe(
      'index unreachable: fetch failed: connect ECONNREFUSED 127.0.0.1:9',
    );
    expect(describeCause('plain')).toBe('plain');
  });
});
