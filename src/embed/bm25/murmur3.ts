/**
 * MurmurHash3, x86 32-bit variant (Austin Appleby's reference algorithm), as the Python `mmh3`
 * package computes it: `mmh3.hash(text)` hashes the UTF-8 bytes with seed 0 and returns the
 * result as a signed 32-bit integer.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

function rotl32(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function mixBlock(k: number): number {
  return Math.imul(rotl32(Math.imul(k, C1), 15), C2);
}

/** Hash of `bytes[0..length)`; returned as a signed 32-bit integer. */
export function murmur3X86_32(bytes: Uint8Array, seed = 0, length = bytes.length): number {
  let h = seed | 0;
  const blockEnd = length & ~3;
  for (let i = 0; i < blockEnd; i += 4) {
    const k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    h ^= mixBlock(k);
    h = rotl32(h, 13);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const rest = length & 3;
  if (rest > 0) {
    let k = 0;
    if (rest === 3) k ^= bytes[blockEnd + 2]! << 16;
    if (rest >= 2) k ^= bytes[blockEnd + 1]! << 8;
    k ^= bytes[blockEnd]!;
    h ^= mixBlock(k);
  }
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}

const encoder = new TextEncoder();
// One scratch buffer, grown on demand: tokens are short, so hashing needs no allocation.
let scratch = new Uint8Array(256);

/** `mmh3.hash(text)`: MurmurHash3 x86_32 of the UTF-8 encoding of `text`, seed 0, signed. */
export function murmur3Utf8(text: string, seed = 0): number {
  // UTF-8 takes at most 3 bytes per UTF-16 code unit.
  const need = text.length * 3;
  if (need > scratch.length) scratch = new Uint8Array(Math.max(need, scratch.length * 2));
  const { written } = encoder.encodeInto(text, scratch);
  return murmur3X86_32(scratch, seed, written);
}
