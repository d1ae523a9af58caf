/**
 * Just enough of RESP2 (the Redis protocol) for a gate between clients and Redis: commands
 * as clients send them (an array of bulk strings), and where each reply of a server ends.
 * Nothing here copies a payload it does not have to.
 */

/** How big a command may be; a client that sends more is cut off (its bytes are never buffered whole). */
export interface CommandLimits {
  /** Bytes in one argument (a script's argument, say). */
  maxArgumentBytes: number;
  /** Arguments in one command. */
  maxArguments: number;
  /** Bytes of all of one command's arguments together. */
  maxCommandBytes: number;
}

export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** The longest header line (`*<count>` or `$<length>`) a client may send before its CRLF. */
const MAX_HEADER_BYTES = 32;

/**
 * Cuts a client's byte stream into commands. Only the array form is taken (what every
 * client library sends); an inline command (a bare line such as `SET k v`) is a
 * ProtocolError, as is anything over the limits, so that a hostile client cannot make the
 * gate hold more than one command's limit of its bytes.
 */
export class CommandReader {
  private buffer: Buffer = Buffer.alloc(0);

  constructor(private readonly limits: CommandLimits) {}

  /**
   * The complete commands in what has arrived so far, in order; the rest waits for more
   * bytes. `error`: the stream broke the protocol or a limit after those commands, and
   * cannot be followed any further.
   */
  push(chunk: Buffer): { commands: Buffer[][]; raw: Buffer[]; error?: ProtocolError } {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const commands: Buffer[][] = [];
    /** Each command's own bytes, as sent: what a gate passes on unchanged. */
    const raw: Buffer[] = [];
    try {
      for (;;) {
        const read = this.readCommand();
        if (!read) break;
        commands.push(read.command);
        raw.push(this.buffer.subarray(0, read.end));
        this.buffer = this.buffer.subarray(read.end);
      }
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      this.buffer = Buffer.alloc(0);
      return { commands, raw, error };
    }
    return { commands, raw };
  }

  private readCommand(): { command: Buffer[]; end: number } | undefined {
    const { buffer, limits } = this;
    if (buffer.length === 0) return undefined;
    if (buffer[0] !== 0x2a /* '*' */) throw new ProtocolError('only commands sent as RESP arrays are taken');
    const head = readHeader(buffer, 0);
    if (!head) return undefined;
    const count = head.value;
    if (count < 1 || count > limits.maxArguments) throw new ProtocolError(`a command has 1 to ${limits.maxArguments} arguments`);
    let offset = head.end;
    let total = 0;
    const command: Buffer[] = [];
    for (let index = 0; index < count; index++) {
      if (offset >= buffer.length) return undefined;
      if (buffer[offset] !== 0x24 /* '$' */) throw new ProtocolError('a command\'s arguments are bulk strings');
      const length = readHeader(buffer, offset);
      if (!length) return undefined;
      if (length.value < 0 || length.value > limits.maxArgumentBytes) throw new ProtocolError(`an argument is at most ${limits.maxArgumentBytes} bytes`);
      total += length.value;
      if (total > limits.maxCommandBytes) throw new ProtocolError(`a command is at most ${limits.maxCommandBytes} bytes`);
      const end = length.end + length.value;
      if (buffer.length < end + 2) return undefined;
      if (buffer[end] !== 0x0d || buffer[end + 1] !== 0x0a) throw new ProtocolError('an argument does not end with CRLF');
      command.push(buffer.subarray(length.end, end));
      offset = end + 2;
    }
    return { command, end: offset };
  }
}

/** `<type><integer>\r\n` at `at`: the integer and where the line ends; undefined until the CRLF has arrived. */
function readHeader(buffer: Buffer, at: number): { value: number; end: number } | undefined {
  const lineEnd = buffer.indexOf('\r\n', at + 1);
  if (lineEnd < 0) {
    if (buffer.length - at > MAX_HEADER_BYTES) throw new ProtocolError('a header line is too long');
    return undefined;
  }
  const text = buffer.toString('latin1', at + 1, lineEnd);
  if (!/^-?\d{1,12}$/.test(text)) throw new ProtocolError('a header line is not a number');
  return { value: Number(text), end: lineEnd + 2 };
}

/** A command as the client sent it, for the server: an array of bulk strings. */
export function encodeCommand(args: readonly (Buffer | string)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = typeof arg === 'string' ? Buffer.from(arg) : arg;
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/** A RESP error reply (`-<message>\r\n`); line breaks in the message would end it early, so they become spaces. */
export function encodeError(message: string): Buffer {
  return Buffer.from(`-${message.replace(/[\r\n]+/g, ' ')}\r\n`);
}

/** A RESP bulk-string reply (`$<length>` and the bytes). */
export function encodeBulk(text: string | Buffer): Buffer {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  return Buffer.concat([Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n')]);
}

/** A RESP simple-string reply (`+OK`). */
export function encodeStatus(status: string): Buffer {
  return Buffer.from(`+${status}\r\n`);
}

/**
 * Where the first complete reply in `buffer` (from `at`) ends, or undefined until all of it
 * has arrived. RESP2 only (the gate lets no client switch to RESP3): simple strings,
 * errors, integers, bulk strings and arrays, nested.
 */
export function replyEnd(buffer: Buffer, at = 0): number | undefined {
  if (at >= buffer.length) return undefined;
  const type = buffer[at];
  const lineEnd = buffer.indexOf('\r\n', at + 1);
  if (lineEnd < 0) return undefined;
  switch (type) {
    case 0x2b: // '+'
    case 0x2d: // '-'
    case 0x3a: // ':'
      return lineEnd + 2;
    case 0x24: {
      // '$'
      const length = Number(buffer.toString('latin1', at + 1, lineEnd));
      if (length < 0) return lineEnd + 2;
      const end = lineEnd + 2 + length + 2;
      return buffer.length >= end ? end : undefined;
    }
    case 0x2a: {
      // '*'
      const count = Number(buffer.toString('latin1', at + 1, lineEnd));
      let offset = lineEnd + 2;
      for (let index = 0; index < count; index++) {
        const end = replyEnd(buffer, offset);
        if (end === undefined) return undefined;
        offset = end;
      }
      return offset;
    }
    default:
      throw new ProtocolError(`the server sent a reply of an unknown type (${JSON.stringify(String.fromCharCode(type!))})`);
  }
}
