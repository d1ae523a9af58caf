import type { ByteRange } from '@envengine/materialization-storage';

/**
 * One byte range of a `Range` header (RFC 9110 §14.1.2) for a file of `size` bytes:
 * `bytes=a-b`, `bytes=a-` or `bytes=-n`, with `b` clipped to the file's end. Null when the
 * header is not one such range (several ranges, another unit, malformed): the whole file
 * is then sent, as the RFC lets a server do. `unsatisfiable` when no byte of it is in the
 * file (a 416).
 */
export function parseByteRange(header: string, size: number): ByteRange | null | 'unsatisfiable' {
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match) return null;
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return null;
  if (first === '') {
    // A suffix: the last n bytes.
    const length = Number(last);
    if (!Number.isSafeInteger(length)) return null;
    if (length === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? Number.MAX_SAFE_INTEGER : Number(last);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(end, size - 1) };
}
