/**
 * How much structure a JSON body may have, besides its bytes (`BODY_LIMITS`). A body of a few MiB
 * can hold hundreds of thousands of keys; `JSON.parse` and then the zod validation of the route walk
 * every one of them on the event loop, so every other request (health probes included) waits. These
 * limits are checked while the body streams in, before it is parsed (src/http/json-body-parser.ts).
 */
export interface JsonShapeLimits {
  /** Nesting of objects and arrays (`{"a":[1]}` is 2 deep). */
  depth: number;
  /** Keys of one object. */
  keys: number;
  /**
   * Keys of the top-level object, when fewer than `keys`: a schema whose only large object is
   * nested (the judgements of an eval) takes a handful of fields at the top.
   */
  rootKeys?: number;
  /** Items of one array. */
  items: number;
  /** Every key and every value of the body, containers included. */
  values: number;
}

export type JsonShapeLimit = keyof JsonShapeLimits;

const OBJECT = 1;
const ARRAY = 2;

/** What the next significant byte may start. */
const NOTHING = 0;
const VALUE = 1;
const KEY = 2;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * An incremental scanner that counts a JSON text's structure chunk by chunk, without building it.
 * It does not validate (JSON.parse does, afterwards): on a valid text, or on the valid prefix of an
 * invalid one (which is all JSON.parse reads before it fails), its counts are exact, so nothing
 * JSON.parse accepts can have more structure than the limits allow. Work is one pass over the
 * bytes with no allocation, so a chunk of 64 KiB costs well under a millisecond.
 */
export class JsonShapeScanner {
  private readonly kinds: Uint8Array;
  private readonly counts: Uint32Array;
  private depth = 0;
  private values = 0;
  private expect = VALUE;
  private inString = false;
  private escaped = false;
  /** The limit the body went over, once it has. */
  exceeded: JsonShapeLimit | undefined;

  private readonly rootKeys: number;

  constructor(readonly limits: JsonShapeLimits) {
    this.rootKeys = limits.rootKeys ?? limits.keys;
    this.kinds = new Uint8Array(limits.depth + 1);
    this.counts = new Uint32Array(limits.depth + 1);
  }

  /** Scans the next bytes; returns the limit exceeded, if any (then stop feeding). */
  feed(chunk: Uint8Array): JsonShapeLimit | undefined {
    if (this.exceeded) return this.exceeded;
    const n = chunk.length;
    let i = 0;
    /** The next backslash at or after `i` (-1: none left in this chunk), found once per backslash. */
    let backslash = -2;
    while (i < n) {
      if (this.inString) {
        // The bulk of a body is string bytes: jump from quote to quote with indexOf (memchr), minding
        // backslashes, instead of looking at every byte.
        if (this.escaped) {
          this.escaped = false;
          i++;
          continue;
        }
        if (backslash !== -1 && backslash < i) backslash = chunk.indexOf(BACKSLASH, i);
        const quote = chunk.indexOf(QUOTE, i);
        if (backslash !== -1 && (quote === -1 || backslash < quote)) {
          if (backslash - i < 64) {
            // Escapes close together (a string of `\"`s): byte by byte for a stretch is cheaper
            // than an indexOf per escape.
            i = this.scanEscapes(chunk, i, Math.min(n, i + 4096));
            backslash = -2;
            continue;
          }
          this.escaped = true;
          i = backslash + 1;
          continue;
        }
        if (quote === -1) break;
        this.inString = false;
        i = quote + 1;
        continue;
      }
      const b = chunk[i++]!;
      switch (b) {
        case 0x20:
        case 0x09:
        case 0x0a:
        case 0x0d:
          break;
        case 0x7b: // {
        case 0x5b: {
          // [
          if (!this.value()) return this.exceeded;
          if (this.depth === this.limits.depth) return this.exceed('depth');
          this.depth++;
          this.kinds[this.depth] = b === 0x7b ? OBJECT : ARRAY;
          this.counts[this.depth] = 0;
          this.expect = b === 0x7b ? KEY : VALUE;
          break;
        }
        case 0x7d: // }
        case 0x5d: // ]
          if (this.depth > 0) this.depth--;
          this.expect = NOTHING;
          break;
        case 0x2c: // ,
          this.expect = this.kinds[this.depth] === OBJECT ? KEY : VALUE;
          break;
        case 0x3a: // :
          this.expect = VALUE;
          break;
        case QUOTE:
          if (this.expect === KEY) {
            const keys = ++this.counts[this.depth]!;
            if (keys > this.limits.keys) return this.exceed('keys');
            if (this.depth === 1 && keys > this.rootKeys) return this.exceed('rootKeys');
            if (++this.values > this.limits.values) return this.exceed('values');
            this.expect = NOTHING;
          } else if (!this.value()) return this.exceeded;
          this.inString = true;
          break;
        default:
          // The first byte of a number or literal; the rest of it expects nothing.
          if (!this.value()) return this.exceeded;
      }
    }
    return undefined;
  }

  /** Reads string bytes one by one from `i` to at most `end`; returns where it stopped. */
  private scanEscapes(chunk: Uint8Array, i: number, end: number): number {
    let escaped = false;
    for (; i < end; i++) {
      const b = chunk[i]!;
      if (escaped) escaped = false;
      else if (b === BACKSLASH) escaped = true;
      else if (b === QUOTE) {
        this.inString = false;
        return i + 1;
      }
    }
    this.escaped = escaped;
    return i;
  }

  /** Counts a value that starts here, if one may start here; false once a limit is exceeded. */
  private value(): boolean {
    if (this.expect !== VALUE) return true;
    this.expect = NOTHING;
    if (++this.values > this.limits.values) return this.fail('values');
    if (
      this.depth > 0 &&
      this.kinds[this.depth] === ARRAY &&
      ++this.counts[this.depth]! > this.limits.items
    ) {
      return this.fail('items');
    }
    return true;
  }

  private fail(limit: JsonShapeLimit): false {
    this.exceeded = limit;
    return false;
  }

  private exceed(limit: JsonShapeLimit): JsonShapeLimit {
    this.exceeded = limit;
    return limit;
  }
}
