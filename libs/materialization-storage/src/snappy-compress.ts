// Snappy's block format (https://github.com/google/snappy/blob/main/format_description.txt),
// compressed the way the reference compressor does: 64 KiB fragments, a hash table of the
// last position of each 4-byte sequence, and lookups that skip further the longer no match
// is found. Written for the asset's child, which is a fresh process at every asset: one
// output buffer reused from page to page, no per-byte method calls, so V8 optimizes its two loops quickly.

import type { ByteSink } from './byte-sink.ts';

const FRAGMENT_SIZE = 1 << 16;
const MAX_HASH_BITS = 14;
/** The compressor stops looking for matches this close to a fragment's end (the reference's margin). */
const INPUT_MARGIN = 15;

/** The most bytes the compressed form of `length` bytes can take. */
export function maxCompressedLength(length: number): number {
  return 32 + length + Math.floor(length / 6);
}

const hashTables = new Map<number, Uint16Array>();

/** Appends the Snappy-compressed form of `input` to `sink`; returns its length. */
export function snappyCompress(input: Uint8Array, sink: ByteSink): number {
  const start = sink.length;
  sink.varint(input.length);
  sink.ensure(maxCompressedLength(input.length));
  const output = sink.bytes;
  let op = sink.length;
  for (let from = 0; from < input.length; from += FRAGMENT_SIZE) {
    op = compressFragment(input, from, Math.min(FRAGMENT_SIZE, input.length - from), output, op);
  }
  sink.length = op;
  return op - start;
}

function load32(input: Uint8Array, at: number): number {
  return input[at]! | (input[at + 1]! << 8) | (input[at + 2]! << 16) | (input[at + 3]! << 24);
}

function emitLiteral(input: Uint8Array, from: number, length: number, output: Uint8Array, op: number): number {
  const n = length - 1;
  if (n < 60) {
    output[op++] = n << 2;
  } else if (n < 0x100) {
    output[op++] = 60 << 2;
    output[op++] = n;
  } else if (n < 0x10000) {
    output[op++] = 61 << 2;
    output[op++] = n & 0xff;
    output[op++] = n >>> 8;
  } else {
    // A fragment is at most 64 KiB, so three bytes always hold the length.
    output[op++] = 62 << 2;
    output[op++] = n & 0xff;
    output[op++] = (n >>> 8) & 0xff;
    output[op++] = n >>> 16;
  }
  if (length < 32) {
    // Short literals are the common case: a loop is cheaper than a view and a copy.
    for (let i = 0; i < length; i++) output[op + i] = input[from + i]!;
  } else {
    output.set(input.subarray(from, from + length), op);
  }
  return op + length;
}

function emitCopy(output: Uint8Array, op: number, offset: number, length: number): number {
  // Copies of 64 bytes at most each; the last one left at 4 or more bytes.
  while (length >= 68) {
    output[op++] = 2 | (63 << 2);
    output[op++] = offset & 0xff;
    output[op++] = offset >>> 8;
    length -= 64;
  }
  if (length > 64) {
    output[op++] = 2 | (59 << 2);
    output[op++] = offset & 0xff;
    output[op++] = offset >>> 8;
    length -= 60;
  }
  if (length < 12 && offset < 2048) {
    output[op++] = 1 | ((length - 4) << 2) | ((offset >>> 8) << 5);
    output[op++] = offset & 0xff;
  } else {
    output[op++] = 2 | ((length - 1) << 2);
    output[op++] = offset & 0xff;
    output[op++] = offset >>> 8;
  }
  return op;
}

function compressFragment(input: Uint8Array, base: number, size: number, output: Uint8Array, op: number): number {
  let hashBits = 1;
  while (1 << hashBits <= size && hashBits <= MAX_HASH_BITS) hashBits += 1;
  hashBits -= 1;
  const shift = 32 - hashBits;
  let table = hashTables.get(hashBits);
  if (table === undefined) {
    table = new Uint16Array(1 << hashBits);
    hashTables.set(hashBits, table);
  } else {
    table.fill(0);
  }
  const end = base + size;
  let nextEmit = base;
  if (size >= INPUT_MARGIN) {
    const limit = end - INPUT_MARGIN;
    let ip = base + 1;
    let nextHash = Math.imul(load32(input, ip), 0x1e35a7bd) >>> shift;
    for (;;) {
      // Look for a 4-byte match, skipping further after every 32 misses.
      let skip = 32;
      let nextIp = ip;
      let candidate: number;
      do {
        ip = nextIp;
        const hash = nextHash;
        nextIp = ip + (skip >>> 5);
        skip += 1;
        if (nextIp > limit) return nextEmit < end ? emitLiteral(input, nextEmit, end - nextEmit, output, op) : op;
        nextHash = Math.imul(load32(input, nextIp), 0x1e35a7bd) >>> shift;
        candidate = base + table[hash]!;
        table[hash] = ip - base;
      } while (load32(input, ip) !== load32(input, candidate));
      op = emitLiteral(input, nextEmit, ip - nextEmit, output, op);
      // Emit copies while the bytes after each one match again.
      do {
        const start = ip;
        let matched = 4;
        while (ip + matched < end && input[ip + matched] === input[candidate + matched]) matched += 1;
        ip += matched;
        op = emitCopy(output, op, start - candidate, matched);
        nextEmit = ip;
        if (ip >= limit) return nextEmit < end ? emitLiteral(input, nextEmit, end - nextEmit, output, op) : op;
        table[Math.imul(load32(input, ip - 1), 0x1e35a7bd) >>> shift] = ip - 1 - base;
        const hash = Math.imul(load32(input, ip), 0x1e35a7bd) >>> shift;
        candidate = base + table[hash]!;
        table[hash] = ip - base;
      } while (load32(input, ip) === load32(input, candidate));
      ip += 1;
      nextHash = Math.imul(load32(input, ip), 0x1e35a7bd) >>> shift;
    }
  }
  return nextEmit < end ? emitLiteral(input, nextEmit, end - nextEmit, output, op) : op;
}
