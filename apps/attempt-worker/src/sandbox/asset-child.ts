// The sandboxed child process that runs one asset's user code (started by asset-runner.ts
// under Node's permission model). It may read only the bundle, this script and its row
// codec, so it runs bundled into one file (asset-child.js beside main.js in the build;
// from source, os-sandbox.ts bundles it with esbuild when it stages it) with Node
// built-ins and its sibling files. An emit's rows are checked and encoded as Parquet here,
// under the asset's own memory and CPU caps, and an upstream's file is decoded here: only
// bytes cross to the worker. The row codec is the file beside it (asset-child-codec.ts),
// loaded at the first emit or read, so that an asset that does neither never evaluates it.
import { Socket } from 'node:net';
import { format } from 'node:util';
import type { DeclaredSchema, Row } from '@envengine/materialization-storage/codec';
import {
  CHANNEL_FD,
  FILE_CHUNK_BYTES,
  MAX_ERROR_CHARS,
  MAX_LOG_MESSAGE_CHARS,
  type ChildMessage,
  type EmitRefusal,
  type ParentMessage,
  type SandboxCallMethod,
} from './sandbox-protocol.ts';
import { bytesFrameOf, decodeValue, encodeValue, frameContent, FrameReader, frameOf } from './sandbox-wire.ts';

type RunMessage = Extract<ParentMessage, { type: 'run' }>;
type ReplyMessage = Extract<ParentMessage, { type: 'reply' }>;
type RowCodec = typeof import('./asset-child-codec.ts');

let rowCodec: Promise<RowCodec> | undefined;

/** The row codec, evaluated once, at the first emit or read. Staged beside this file under this name (os-sandbox.ts). */
function loadRowCodec(): Promise<RowCodec> {
  // A URL, not a literal: the codec stays a file of its own when this one is bundled.
  return (rowCodec ??= import(new URL('./asset-child-codec.mjs', import.meta.url).href) as Promise<RowCodec>);
}

let channel: Socket;
try {
  channel = new Socket({ fd: CHANNEL_FD, readable: true, writable: true });
} catch {
  process.stderr.write('asset-child runs only under the attempt worker (it needs its channel on fd 3)\n');
  process.exit(2);
}

/** Sends one frame; resolves once it is written (a closed channel resolves too: the worker is gone). */
function sendFrame(frame: Buffer): Promise<void> {
  return new Promise((resolve) => {
    if (channel.destroyed) return resolve();
    channel.write(frame, () => resolve());
  });
}

/** Sends one message; rejects when it cannot be encoded (a circular value). */
function send(message: ChildMessage): Promise<void> {
  let json: string;
  try {
    json = encodeValue(message);
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
  return sendFrame(frameOf(json));
}

let finished = false;

/** Reports the outcome once, then ends the process whatever user code left running. */
function finish(message: ChildMessage, exitCode: number): void {
  if (finished) return;
  finished = true;
  send(message).then(
    () => process.exit(exitCode),
    () => process.exit(exitCode),
  );
}

function cut(text: string): string {
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}… (cut)` : text;
}

function fail(error: unknown): void {
  const message = cut(error instanceof Error ? error.message : typeof error === 'string' ? error : format('%O', error));
  const stack = error instanceof Error && typeof error.stack === 'string' ? cut(error.stack) : undefined;
  finish({ type: 'failed', error: stack === undefined ? { message } : { message, stack } }, 1);
}

// ctx calls waiting for the worker's reply keep the channel referenced; otherwise it is
// unreferenced, so a user promise that can never settle ends the process instead of
// waiting for the time limit. A read's file arrives in frames of bytes ahead of its reply.
const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void; file: Buffer[] }>();
let nextCallId = 1;

function call(method: SandboxCallMethod, arg: unknown): Promise<unknown> {
  const id = nextCallId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, file: [] });
    if (pending.size === 1) channel.ref();
    // An emit's file goes ahead of its call, which then carries no argument (or why the rows were refused).
    const sent = method === 'emit' ? sendEmit(id, arg).then((refusal) => send({ type: 'call', id, method, arg: refusal })) : send({ type: 'call', id, method, arg });
    sent.catch((error: unknown) => {
      settleCall(id);
      reject(error instanceof Error ? error : new Error(String(error)));
    });
  });
}

function isPlainObject(value: unknown): value is Row {
  if (value === null || typeof value !== 'object') return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * An emit's rows checked against the asset's schema and encoded as one Parquet file, each
 * row group's bytes sent as it is written; null once the whole file is sent, or why the
 * rows were refused (the worker then fails the asset with it).
 */
async function sendEmit(id: number, rows: unknown): Promise<EmitRefusal | null> {
  if (!Array.isArray(rows) || !rows.every(isPlainObject)) return { error: `asset ${assetKey}: ctx.emit takes an array of plain row objects` };
  const { ParquetRowWriter } = await loadRowCodec();
  const writer = new ParquetRowWriter({ schema: assetSchema, onBytes: (bytes) => sendFile(id, bytes) });
  try {
    await writer.write(rows);
    await writer.finish();
  } catch (error) {
    return { error: cut(error instanceof Error ? error.message : String(error)) };
  }
  return null;
}

async function sendFile(id: number, bytes: Uint8Array): Promise<void> {
  for (let start = 0; start < bytes.byteLength; start += FILE_CHUNK_BYTES) {
    await sendFrame(bytesFrameOf(id, bytes.subarray(start, start + FILE_CHUNK_BYTES)));
  }
}

function settleCall(id: number) {
  const entry = pending.get(id);
  pending.delete(id);
  if (pending.size === 0) channel.unref();
  return entry;
}

function onReply(reply: ReplyMessage): void {
  const entry = settleCall(reply.id);
  if (!entry) return;
  if (!reply.ok) entry.reject(new Error(reply.error.message));
  else if (entry.file.length === 0) entry.resolve(reply.value);
  else {
    // ctx.read: the upstream's file came ahead of the reply.
    const file = Buffer.concat(entry.file);
    entry.file = [];
    loadRowCodec()
      .then(({ decodeParquet }) => decodeParquet(new Uint8Array(file.buffer, file.byteOffset, file.byteLength)))
      .then(entry.resolve, entry.reject);
  }
}

function log(...args: unknown[]): void {
  // Logging must never fail user code: an unsendable line is dropped.
  const message = format(...args);
  send({ type: 'log', message: message.length > MAX_LOG_MESSAGE_CHARS ? `${message.slice(0, MAX_LOG_MESSAGE_CHARS)}… (truncated)` : message }).catch(() => undefined);
}

// User code's console output becomes log lines too (nothing reaches the worker's stdout).
for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace', 'dirxml', 'table'] as const) {
  console[method] = (...args: unknown[]) => log(...args);
}
console.dir = (value: unknown) => log('%O', value);

type AssetFunction = (ctx: unknown) => unknown;

function defaultExport(namespace: Record<string, unknown>): AssetFunction | undefined {
  const candidate = namespace['default'];
  if (typeof candidate === 'function') return candidate as AssetFunction;
  // CommonJS compiled from ESM: `exports.default = fn` arrives as { default: { default: fn } }.
  if (candidate !== null && typeof candidate === 'object') {
    const nested = (candidate as Record<string, unknown>)['default'];
    if (typeof nested === 'function') return nested as AssetFunction;
  }
  return undefined;
}

let emits: Promise<unknown> = Promise.resolve();

/** The asset's declared schema, from its `run` message. */
let assetSchema: DeclaredSchema | null = null;

async function run(job: RunMessage): Promise<void> {
  const ctx = Object.freeze({
    asset: job.assetKey,
    run: job.run === null ? undefined : Object.freeze({ ...job.run }),
    // One emit at a time, in the order the user code made them: the worker stores an emit's rows as they arrive.
    emit: (rows: unknown) => {
      const emitted = emits.then(() => call('emit', rows)).then(() => undefined);
      emits = emitted.catch(() => undefined);
      return emitted;
    },
    read: (assetKey: unknown) => call('read', assetKey),
    connection: (name: unknown) => call('connection', name),
    log,
  });
  const namespace = (await import(job.entryUrl)) as Record<string, unknown>;
  const assetFunction = defaultExport(namespace);
  if (!assetFunction) throw new Error(`the entry module of asset ${job.assetKey} has no default export function`);
  await assetFunction(ctx);
}

/** The asset being run, once the worker has sent the job. */
let assetKey: string | undefined;

function onMessage(message: ParentMessage): void {
  if (message.type === 'reply') {
    onReply(message);
  } else if (message.type === 'run' && assetKey === undefined) {
    assetKey = message.assetKey;
    assetSchema = message.schema;
    channel.unref();
    run(message).then(() => finish({ type: 'done' }, 0), fail);
  }
}

// The worker is trusted: its frames have no size cap here (the child's memory limit is the cap).
const frames = new FrameReader(2 ** 32 - 1);
channel.on('data', (chunk: Buffer) => {
  for (const payload of frames.push(chunk)) {
    const frame = frameContent(payload);
    if (frame.kind === 'message') onMessage(decodeValue(frame.json) as ParentMessage);
    else pending.get(frame.id)?.file.push(frame.bytes);
  }
});
// The worker went away: nobody can receive the result, so stop.
channel.on('end', () => process.exit(1));
channel.on('error', () => process.exit(1));
// Errors thrown from user callbacks (timers, unawaited promises) fail the asset too.
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);
// The event loop emptied while the asset's promise is still pending: it can never settle.
process.on('beforeExit', () => {
  if (assetKey !== undefined) fail(new Error(`the function of asset ${assetKey} returned a promise that never settled`));
});
