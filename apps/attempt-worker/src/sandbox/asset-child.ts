// The sandboxed child process that runs one asset's user code (started by asset-runner.ts
// under Node's permission model). It must stay dependency-free: it may read only the
// bundle and this script, so it imports Node built-ins and types only. In the build it is
// bundled beside main.js as asset-child.js; from source, Node strips its types.
import { format } from 'node:util';
import type { ChildMessage, ParentMessage, SandboxCallMethod } from './sandbox-protocol.ts';

type RunMessage = Extract<ParentMessage, { type: 'run' }>;
type ReplyMessage = Extract<ParentMessage, { type: 'reply' }>;

if (typeof process.send !== 'function' || process.channel === undefined) {
  process.stderr.write('asset-child runs only under the attempt worker (it needs an IPC channel)\n');
  process.exit(2);
}
const channel = process.channel;
const sendRaw = process.send.bind(process);

/** Sends one message; resolves once it is written (a closed channel resolves too: the worker is gone). */
function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    try {
      sendRaw(message, undefined, {}, () => resolve());
    } catch (error) {
      reject(error); // not structured-cloneable
    }
  });
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
    send({ type: 'call', id, method, arg }).catch((error: unknown) => {
      settleCall(id);
      reject(error instanceof Error ? error : new Error(String(error)));
    });
  });
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
  send({ type: 'log', message: format(...args) }).catch(() => undefined);
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

async function run(job: RunMessage): Promise<void> {
  const ctx = Object.freeze({
    asset: job.assetKey,
    run: job.run === null ? undefined : Object.freeze({ ...job.run }),
    emit: async (rows: unknown) => {
      await call('emit', rows);
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

process.on('message', (message: ParentMessage) => {
  if (message.type === 'reply') {
    onReply(message);
  } else if (message.type === 'run' && assetKey === undefined) {
    assetKey = message.assetKey;
    channel.unref();
    run(message).then(() => finish({ type: 'done' }, 0), fail);
  }
});

// The worker went away: nobody can receive the result, so stop.
process.on('disconnect', () => process.exit(1));
// Errors thrown from user callbacks (timers, unawaited promises) fail the asset too.
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);
// The event loop emptied while the asset's promise is still pending: it can never settle.
process.on('beforeExit', () => {
  if (assetKey !== undefined) fail(new Error(`the function of asset ${assetKey} returned a promise that never settled`));
});
