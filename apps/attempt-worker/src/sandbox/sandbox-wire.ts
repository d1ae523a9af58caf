// The bytes on the channel between the worker and a sandboxed asset child: frames of a
// 4-byte big-endian length and that many bytes, on a plain socket pair at
// the child's fd 3 (never Node's own IPC channel, whose V8 deserializer throws outside any
// handler of ours on a malformed message, and whose JSON mode buffers a line of any
// length). Built-ins only: the child imports this file too (docs/decisions.md, "The
// child's channel").
//
// A frame is a message (UTF-8 JSON, which never starts with a zero byte) or a chunk of a
// file (a zero byte, the 4-byte big-endian id of the ctx call it belongs to, then the
// bytes): an emit's Parquet file going to the worker, an upstream's going to the child.
//
// JSON carries what rows need beyond JSON through tagged strings, each starting with a NUL
// character (which a user's string starting with NUL is escaped as well):
// Date, bigint, a non-finite number, undefined, and bytes.

const TAG = '\u0000';
/** Length prefix of a frame. */
export const FRAME_HEADER_BYTES = 4;

/** Why the channel's bytes are refused: the frame is too long, or not a message. */
export class FrameError extends Error {
  override readonly name = 'FrameError';
}

function tagged(this: unknown, key: string, value: unknown): unknown {
  // `value` is after toJSON (a Date is already a string): the holder has the original.
  const original = (this as Record<string, unknown>)[key];
  if (original instanceof Date) return `${TAG}d${original.getTime()}`;
  if (original instanceof Uint8Array) return `${TAG}b${Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('base64')}`;
  switch (typeof value) {
    case 'bigint':
      return `${TAG}n${value}`;
    case 'number':
      return Number.isFinite(value) ? value : `${TAG}f${value}`;
    case 'undefined':
      return `${TAG}u`;
    case 'string':
      return value.startsWith(TAG) ? `${TAG}s${value}` : value;
    default:
      return value;
  }
}

function untagged(_key: string, value: unknown): unknown {
  if (typeof value !== 'string' || !value.startsWith(TAG)) return value;
  const body = value.slice(2);
  switch (value[1]) {
    case 'd':
      return new Date(Number(body));
    case 'n':
      return BigInt(body);
    case 'f':
      return Number(body);
    case 'u':
      return undefined;
    case 'b':
      return new Uint8Array(Buffer.from(body, 'base64'));
    case 's':
      return body;
    default:
      throw new FrameError(`unknown tag ${JSON.stringify(value.slice(0, 2))}`);
  }
}

/**
 * Whether JSON carries `row` as it is: a flat object of strings (none starting with NUL),
 * finite numbers, booleans and nulls, the common row. Such a row skips the replacer,
 * which JSON.stringify would otherwise call for every value.
 */
function plainJsonRow(row: unknown): boolean {
  if (row === null || typeof row !== 'object' || Array.isArray(row) || Object.getPrototypeOf(row) !== Object.prototype) return false;
  for (const key in row) {
    const cell = (row as Record<string, unknown>)[key];
    switch (typeof cell) {
      case 'string':
        if (cell.startsWith(TAG)) return false;
        break;
      case 'number':
        if (!Number.isFinite(cell)) return false;
        break;
      case 'boolean':
        break;
      case 'object':
        if (cell !== null) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** One value as the channel's JSON text (throws on a circular value, as JSON does). */
export function encodeValue(value: unknown): string {
  if (plainJsonRow(value)) return JSON.stringify(value);
  return JSON.stringify({ v: value }, tagged).slice('{"v":'.length, -1);
}

/**
 * A FrameError when `text` nests arrays and objects deeper than `maxDepth`: one pass over
 * its characters, counting brackets outside strings, so that a deep text is refused before
 * JSON.parse and its reviver spend time (and stack) on it. Malformed JSON is left to the parse.
 */
export function checkNesting(text: string, maxDepth: number): void {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    if (inString) {
      if (char === 0x5c) index++; // a backslash: the next character is escaped
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x5b || char === 0x7b) {
      if (++depth > maxDepth) throw new FrameError(`a message nested deeper than ${maxDepth} levels`);
    } else if (char === 0x5d || char === 0x7d) depth--;
  }
}

/**
 * A value from the channel's JSON text; a FrameError or SyntaxError when it is not one.
 * With `maxDepth`, a text nested deeper is refused before it is parsed (`checkNesting`).
 */
export function decodeValue(text: string, maxDepth?: number): unknown {
  if (maxDepth !== undefined) checkNesting(text, maxDepth);
  // Only a text holding a tag (a NUL, which JSON writes as \u0000) needs the reviver, which is called for every value.
  return text.includes('\\u0000') ? JSON.parse(text, untagged) : JSON.parse(text);
}

/** The first byte of a frame of file bytes (a message's JSON never starts with it). */
const BYTES_FRAME = 0;
/** What precedes the bytes in a frame of file bytes: the marker and the call id. */
const BYTES_FRAME_HEAD = 5;

/** A frame's payload: a message's JSON text, or a chunk of file bytes for call `id`. */
export type Frame = { kind: 'message'; json: string } | { kind: 'bytes'; id: number; bytes: Buffer };

/** What a frame's payload holds; a FrameError for a bytes frame too short to name its call. */
export function frameContent(payload: Buffer): Frame {
  if (payload.byteLength === 0 || payload[0] !== BYTES_FRAME) return { kind: 'message', json: payload.toString('utf8') };
  if (payload.byteLength < BYTES_FRAME_HEAD) throw new FrameError('a frame of bytes without the id of its call');
  return { kind: 'bytes', id: payload.readUInt32BE(1), bytes: payload.subarray(BYTES_FRAME_HEAD) };
}

/** One frame of file bytes for call `id` (an integer below 2^32). */
export function bytesFrameOf(id: number, bytes: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + BYTES_FRAME_HEAD + bytes.byteLength);
  frame.writeUInt32BE(BYTES_FRAME_HEAD + bytes.byteLength, 0);
  frame[FRAME_HEADER_BYTES] = BYTES_FRAME;
  frame.writeUInt32BE(id, FRAME_HEADER_BYTES + 1);
  frame.set(bytes, FRAME_HEADER_BYTES + BYTES_FRAME_HEAD);
  return frame;
}

/** One frame holding `json` (text already encoded with `encodeValue`). */
export function frameOf(json: string): Buffer {
  const body = Buffer.from(json, 'utf8');
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + body.byteLength);
  frame.writeUInt32BE(body.byteLength, 0);
  body.copy(frame, FRAME_HEADER_BYTES);
  return frame;
}

/**
 * Cuts a byte stream into frames. A frame announced longer than `maxFrameBytes` is refused
 * as soon as its header is read: nothing of it is buffered.
 */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** The length of the frame being read, once its header is complete. */
  private expected: number | null = null;

  constructor(private readonly maxFrameBytes: number) {}

  /** The payloads of the complete frames that `chunk` ends (see `frameContent`); a FrameError for an oversized one. */
  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.buffered += chunk.byteLength;
    const frames: Buffer[] = [];
    for (;;) {
      if (this.expected === null) {
        if (this.buffered < FRAME_HEADER_BYTES) return frames;
        const length = this.take(FRAME_HEADER_BYTES).readUInt32BE(0);
        if (length > this.maxFrameBytes) {
          this.chunks = [];
          this.buffered = 0;
          throw new FrameError(`a message of ${length} bytes, over the channel's limit of ${this.maxFrameBytes} bytes`);
        }
        this.expected = length;
      }
      if (this.buffered < this.expected) return frames;
      frames.push(this.take(this.expected));
      this.expected = null;
    }
  }

  /** Bytes buffered of a frame not yet complete. */
  get pending(): number {
    return this.buffered;
  }

  private take(count: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    const taken = all.subarray(0, count);
    const rest = all.subarray(count);
    this.chunks = rest.byteLength > 0 ? [rest] : [];
    this.buffered = rest.byteLength;
    return taken;
  }
}
