// The sandboxed child process that runs one asset's user code (started by asset-runner.ts
// under Node's permission model). It must stay dependency-free: it may read only the
// bundle and this one script, so it imports Node built-ins and its sibling files only, and
// runs bundled into one file (asset-child.js beside main.js in the build; from source,
// os-sandbox.ts bundles it with esbuild when it stages it).
import { Socket } from 'node:net';
import { format } from 'node:util';
import { CHANNEL_FD, MAX_CHILD_MESSAGE_BYTES, MAX_LOG_MESSAGE_CHARS, ROWS_MESSAGE_BYTES, type ChildMessage, type ParentMessage, type SandboxCallMethod } from './sandbox-protocol.ts';
import { decodeValue, encodeValue, FrameReader, frameOf } from './sandbox-wire.ts';

type RunMessage = Extract<ParentMessage, { type: 'run' }>;
type ReplyMessage = Extract<ParentMessage, { type: 'reply' }>;

let channel: Socket;
try {
  channel = new Socket({ fd: CHANNEL_FD, readable: true, writable: true });
} catch {
  process.stderr.write('asset-child runs only under the attempt worker (it needs its channel on fd 3)\n');
  process.exit(2);
}

/** Sends one frame; resolves once it is written (a closed channel resolves too: the worker is gone). */
function sendFrame(json: string): Promise<void> {
  return new Promise((resolve) => {
    if (channel.destroyed) return resolve();
    channel.write(frameOf(json), () => resolve());
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
  return sendFrame(json);
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

function fail(error: unknown): void {
  const message = error instanceof Error ? error.message : typeof error === 'string' ? error : format('%O', error);
  const stack = error instanceof Error && typeof error.stack === 'string' ? error.stack : undefined;
  finish({ type: 'failed', error: stack === undefined ? { message } : { message, stack } }, 1);
}

// ctx calls waiting for the worker's reply keep the IPC channel referenced; otherwise it is
// unreferenced, so a user promise that can never settle ends the process instead of
// waiting for the time limit.
const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
let nextCallId = 1;

function call(method: SandboxCallMethod, arg: unknown): Promise<unknown> {
  const id = nextCallId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    if (pending.size === 1) channel.ref();
    // An emit's rows go ahead of its call; anything but an array goes as the call's argument, for the worker to refuse.
    const sent = method === 'emit' && Array.isArray(arg) ? sendRows(id, arg).then(() => send({ type: 'call', id, method, arg: null })) : send({ type: 'call', id, method, arg });
    sent.catch((error: unknown) => {
      settleCall(id);
      reject(error instanceof Error ? error : new Error(String(error)));
    });
  });
}

/**
 * An emit's rows in messages of about ROWS_MESSAGE_BYTES each, so that no message is over
 * the channel's limit however many rows there are.
 */
async function sendRows(id: number, rows: readonly unknown[]): Promise<void> {
  const head = `{"type":"rows","id":${id},"rows":[`;
  let batch: string[] = [];
  let size = 0;
  for (const [index, row] of rows.entries()) {
    const json = encodeValue(row);
    // The worker would refuse the message whole (and stop the asset): say which row instead.
    const rowLimit = MAX_CHILD_MESSAGE_BYTES - head.length - 2;
    if (json.length * 3 > rowLimit && Buffer.byteLength(json) > rowLimit) {
      throw new Error(`ctx.emit: row ${index} is ${Buffer.byteLength(json)} bytes as JSON, over the ${rowLimit} bytes one row may have`);
    }
    if (batch.length > 0 && size + json.length > ROWS_MESSAGE_BYTES) {
      await sendFrame(`${head}${batch.join(',')}]}`);
      batch = [];
      size = 0;
    }
    batch.push(json);
    size += json.length + 1;
  }
  if (batch.length > 0) await sendFrame(`${head}${batch.join(',')}]}`);
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
  if (reply.ok) entry.resolve(reply.value);
  else entry.reject(new Error(reply.error.message));
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
    channel.unref();
    run(message).then(() => finish({ type: 'done' }, 0), fail);
  }
}

// The worker is trusted: its frames have no size cap here (the child's memory limit is the cap).
const frames = new FrameReader(2 ** 32 - 1);
channel.on('data', (chunk: Buffer) => {
  for (const frame of frames.push(chunk)) onMessage(decodeValue(frame) as ParentMessage);
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
