// Runs one asset's user code in a child process with a time limit, so that a crash, an
// endless loop or a runaway allocation fails the attempt, not the worker
// (docs/design.md#materializations-and-storage). The child runs in the OS sandbox of
// os-sandbox.ts (memory and CPU capped, no network, no view of the host), and under Node's
// permission model inside it: it may read its bundle and its own script, write only its
// private /tmp, start no process, thread or addon; logs, emits, upstream reads and
// connections go through ctx, relayed over its channel to the handlers given here. The child
// checks and encodes an emit's rows itself; only the file's bytes reach the worker, and an
// upstream's file goes to the child as bytes.
//
// Over 300 lines on purpose: `SandboxedAsset` is one state machine (start, IPC relay, the
// three limits, every way a child can end, and the one outcome it reports), and each of
// its exits must settle exactly once; split across files, that invariant would have no
// single place to be read in.
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import type { Egress } from '@envengine/contracts';
import type { AssetCgroup } from './asset-cgroups.ts';
import { bundleRootInSandbox, entryUrlInSandbox, signalOfExit, spawnAssetChild, type SandboxSettings } from './os-sandbox.ts';
import { userFacingError } from './thrown-error.ts';
import type { DeclaredSchema } from '@envengine/materialization-storage';
import { FILE_CHUNK_BYTES, MAX_CHILD_MESSAGE_BYTES, MAX_CHILD_MESSAGE_DEPTH, MAX_ERROR_CHARS, MAX_LOG_MESSAGE_CHARS, type ParentMessage } from './sandbox-protocol.ts';
import { bytesFrameOf, decodeValue, encodeValue, frameContent, FrameError, FrameReader, frameOf } from './sandbox-wire.ts';
import type { WarmSandboxes } from './warm-sandboxes.ts';

/**
 * One ctx.emit's Parquet file as its bytes arrive from the child
 * (docs/design.md#availability: the worker's memory does not grow with an asset's data). The
 * bytes are the child's, hence untrusted: `finish` checks what the file stores.
 */
export interface EmitSink {
  /** Appends the next bytes of the file; the worker reads nothing more from the child until it settles. A rejection fails the asset. */
  write(bytes: Uint8Array): Promise<void>;
  /** Ends the emit: the file becomes one materialization. A rejection fails the asset. */
  finish(): Promise<void>;
  /** The emit will not finish (the asset failed or stopped): what was written is thrown away. */
  abort(): void;
}

/** What the worker does for the user code's ctx calls. */
export interface AssetHandlers {
  /** Starts one ctx.emit (throws to refuse it, e.g. on a read_only binding); a child makes its emits one at a time. */
  emit(): EmitSink;
  /** The Parquet file of an upstream asset's latest materialization (ctx.read), which goes to the child to decode. A rejection fails the asset. */
  read(assetKey: string): Promise<AsyncIterable<Uint8Array>>;
  /** The resolved config of a binding (ctx.connection). A rejection fails the asset. */
  connection(name: string): Promise<Record<string, unknown>>;
  /** One log line: ctx.log, the user code's console and anything it writes to stdout/stderr. */
  log(message: string): void;
}

export interface RunAssetOptions {
  /** The unpacked bundle: the only directory the child may read. */
  bundleDir: string;
  /** The asset's module, relative to `bundleDir`; refused if it resolves outside it. */
  entry: string;
  assetKey: string;
  /** Exposed to user code as `ctx.run`. */
  run?: { id: string; attempt: number };
  /** The asset's declared schema, which the child checks each emit's rows against; null: each emit's first rows decide. */
  schema: DeclaredSchema | null;
  /** Wall-clock limit from spawn to the end, after which the child is killed. */
  timeoutMs: number;
  /** Which limit `timeoutMs` is (named in the error when it fires), e.g. `timeout_seconds of asset "orders" in the manifest (30 s)`. */
  timeoutSource?: string;
  /** The sandbox and its limits; its environment is the child's whole environment (never the worker's own). */
  sandbox: SandboxSettings;
  /** The environment's egress: `public` gives the child a user-mode network (never the engine host or private ranges). Default `none`. */
  egress?: Egress;
  /** Aborting kills the child at once; the outcome is then `canceled`. */
  signal?: AbortSignal;
  /** Children started ahead of need with the same settings; without it the child is started here. */
  sandboxes?: WarmSandboxes;
  handlers: AssetHandlers;
  /** How long a killed child's pipes may stay open before they are destroyed and the asset settles anyway (CLOSE_DEADLINE_MS). */
  closeDeadlineMs?: number;
  /** Given, once the child is started, a way to read where it stands (for the worker's log when an asset will not stop). */
  watch?: (state: () => SandboxedAssetState) => void;
}

/** Where one asset's child stands: what its outcome still waits for. */
export interface SandboxedAssetState {
  pid: number | null;
  verdict: AssetFailureReason | 'succeeded' | null;
  done_reported: boolean;
  exit_code: number | null;
  exit_signal: string | null;
  /** Every stdio stream closed and the process gone ('close'): the outcome waits for it. */
  closed: boolean;
  settled: boolean;
  calls_in_flight: number;
  frames_queued: number;
  channel: string;
}

export type AssetFailureReason =
  /** The entry was refused before spawning (outside the bundle, missing). */
  | 'refused'
  /** The child process could not be started. */
  | 'not-started'
  /** User code threw (or rejected). */
  | 'threw'
  /** A handler (emit, read, connection) rejected, or ctx was called with a bad argument. */
  | 'handler-failed'
  /** The child exited or was killed by someone else before finishing. */
  | 'exited'
  /** The child sent the worker something the protocol does not allow (too long, malformed, too many calls). */
  | 'protocol'
  | 'timed-out'
  | 'out-of-memory'
  /** Past its CPU time limit (SIGXCPU). */
  | 'cpu-limit'
  | 'canceled';

export type AssetOutcome =
  | { status: 'succeeded' }
  | {
      status: 'failed';
      reason: AssetFailureReason;
      error: string;
      /** For the worker's log only: the child's pipes outlived its kill (SandboxedAsset.abandonPipes). */
      unclosed?: string;
    };

/** How long a child that has reported its outcome (or lost its channel) may take to exit before it is killed. */
const EXIT_GRACE_MS = 2000;
/** How long a killed child's pipes may stay open (held by something outside the kill) before they are destroyed. */
export const CLOSE_DEADLINE_MS = 5000;
/** How much of the child's stderr is kept to recognise V8's out-of-memory report. */
const STDERR_TAIL_CHARS = 8192;
const OUT_OF_MEMORY_TEXT = /JavaScript heap out of memory|Reached heap limit|Fatal process out of memory/;
/** What user code sees when the memory cap refuses a Buffer or an ArrayBuffer. */
const ALLOCATION_FAILED_TEXT = /^(Failed to allocate memory|Array buffer allocation failed)/;
/** Output without a newline is cut into lines of at most this many characters, so that it cannot grow the worker. */
export const MAX_OUTPUT_LINE_CHARS = MAX_LOG_MESSAGE_CHARS;
/** ctx calls of one child waiting for their answers at once; one more fails the asset (each holds the worker's memory and the services' time). */
export const MAX_CALLS_IN_FLIGHT = 64;
/** Call ids fit the 4 bytes a frame of file bytes names its call with. */
const CallId = z.number().int().positive().max(0xffff_ffff);
/** Everything a child may send; anything else fails its asset (sandbox-protocol.ts). */
const ChildMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('call'), id: CallId, method: z.enum(['emit', 'read', 'connection']), arg: z.unknown() }).strict(),
  z.object({ type: z.literal('log'), message: z.string().max(MAX_LOG_MESSAGE_CHARS + 32) }).strict(),
  z.object({ type: z.literal('done') }).strict(),
  z.object({
    type: z.literal('failed'),
    error: z.object({ message: z.string().transform(capChars), stack: z.string().transform(capChars).optional() }).strict(),
  }).strict(),
]);

/** The argument of an emit's call: null (its file came ahead), or why the child refused the rows. */
const EmitCallArg = z.union([z.null(), z.object({ error: z.string().transform(capChars) }).strict()]);

function capChars(text: string): string {
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}… (cut)` : text;
}

export async function runAssetInSandbox(options: RunAssetOptions): Promise<AssetOutcome> {
  if (options.signal?.aborted) return { status: 'failed', reason: 'canceled', error: 'canceled' };
  const located = await locateEntry(options.bundleDir, options.entry);
  if ('error' in located) return { status: 'failed', reason: 'refused', error: located.error };
  if (options.signal?.aborted) return { status: 'failed', reason: 'canceled', error: 'canceled' };
  return new SandboxedAsset(options, located.bundleRoot, located.entryPath).outcome;
}

/** Resolves the entry inside the bundle, following symlinks, or says why it is refused. */
async function locateEntry(bundleDir: string, entry: string): Promise<{ bundleRoot: string; entryPath: string } | { error: string }> {
  if (isAbsolute(entry)) return { error: `entry "${entry}" must be a path inside the bundle, not an absolute path` };
  let bundleRoot: string;
  try {
    bundleRoot = await realpath(bundleDir);
  } catch {
    return { error: `bundle directory ${bundleDir} does not exist` };
  }
  if (!isInside(bundleRoot, resolve(bundleRoot, entry))) return { error: `entry "${entry}" points outside the bundle` };
  let entryPath: string;
  try {
    entryPath = await realpath(resolve(bundleRoot, entry));
  } catch {
    return { error: `entry "${entry}" does not exist in the bundle` };
  }
  if (!isInside(bundleRoot, entryPath)) return { error: `entry "${entry}" points outside the bundle` };
  return { bundleRoot, entryPath };
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
}

/** One run of one child: the first verdict wins, and the outcome waits for the child to be gone. */
class SandboxedAsset {
  readonly outcome: Promise<AssetOutcome>;
  private resolveOutcome!: (outcome: AssetOutcome) => void;
  private readonly child: ChildProcess;
  private readonly channel: Socket;
  private readonly cgroup: AssetCgroup | null;
  private readonly frames = new FrameReader(MAX_CHILD_MESSAGE_BYTES);
  /** Frames read and not yet handled: handling waits while an emit's bytes are stored, and the channel is paused meanwhile. */
  private readonly queued: Buffer[] = [];
  private pumping = false;
  /** The emit whose file is arriving, until its call comes. */
  private openEmit: { id: number; sink: EmitSink } | undefined;
  /** Call ids seen, each answered once: a repeated id is refused. */
  private readonly callIds = new Set<number>();
  private callsInFlight = 0;
  private readonly subject: string;
  private verdict: AssetOutcome | undefined;
  private doneReported = false;
  private closed = false;
  private settled = false;
  private exit: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };
  private stderrTail = '';
  /** The bundle's directory as the child sees it: a stack's paths are made relative to it. */
  private readonly childBundleRoot: string;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly timers: NodeJS.Timeout[] = [];
  private closeDeadline: NodeJS.Timeout | undefined;
  /** Set when the outcome could not wait for the child's pipes (for the worker's log). */
  private unclosed: string | undefined;
  private readonly onAbort = () => this.decide({ status: 'failed', reason: 'canceled', error: 'canceled' }, true);

  constructor(
    private readonly options: RunAssetOptions,
    bundleRoot: string,
    entryPath: string,
  ) {
    this.subject = `asset ${options.assetKey}`;
    this.childBundleRoot = bundleRootInSandbox(options.sandbox, bundleRoot);
    this.outcome = new Promise((resolveOutcome) => (this.resolveOutcome = resolveOutcome));
    const egress = options.egress ?? 'none';
    const sandboxed = options.sandboxes ? options.sandboxes.take(bundleRoot, egress) : spawnAssetChild(options.sandbox, bundleRoot, egress);
    this.child = sandboxed.process;
    this.channel = sandboxed.channel;
    this.cgroup = sandboxed.cgroup;
    this.child.on('error', (error) => this.onChildError(error));
    this.channel.on('data', (chunk: Buffer) => this.onChannelData(chunk));
    this.channel.on('end', () => this.onDisconnect());
    this.child.on('exit', (code, signal) => (this.exit = { code, signal }));
    this.child.on('close', (code, signal) => this.onClose(code, signal));
    if (this.child.stdout) forwardLines(this.child.stdout, (line) => this.log(line));
    if (this.child.stderr) {
      forwardLines(this.child.stderr, (line) => {
        this.stderrTail = (this.stderrTail + line + '\n').slice(-STDERR_TAIL_CHARS);
        this.log(line);
      });
    }
    this.timers.push(
      setTimeout(
        () =>
          this.decide(
            { status: 'failed', reason: 'timed-out', error: `${this.subject} was killed after exceeding its time limit of ${options.timeoutMs} ms${options.timeoutSource ? `: ${options.timeoutSource}` : ''}` },
            true,
          ),
        options.timeoutMs,
      ),
    );
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
    options.watch?.(() => this.state());
    const run: ParentMessage = {
      type: 'run',
      entryUrl: entryUrlInSandbox(options.sandbox, bundleRoot, entryPath),
      assetKey: options.assetKey,
      run: options.run ?? null,
      schema: options.schema,
    };
    // User code runs only once its network (if any) is what the environment allows.
    sandboxed.ready.then(
      () => {
        if (this.verdict === undefined) this.send(run);
      },
      (error: Error) =>
        this.decide({ status: 'failed', reason: 'not-started', error: `${this.subject} could not be given its network: ${error.message}` }, true),
    );
  }

  /** Records the first verdict; `kill` ends the child at once (SIGKILL), otherwise it gets a grace period to exit. */
  private decide(verdict: AssetOutcome, kill: boolean): void {
    if (this.verdict === undefined) this.verdict = verdict;
    if (kill) this.kill();
    else this.killAfterGrace();
    this.maybeSettle();
  }

  /** A throwing log handler loses the line, never the worker. */
  private log(line: string): void {
    try {
      this.options.handlers.log(line);
    } catch {
      // dropped
    }
  }

  /**
   * SIGKILL to the child and to everything in its cgroup. The outcome waits for the child's
   * pipes to close; should something still hold them closeDeadlineMs later, they are
   * destroyed and the asset settles anyway, so that a stopped attempt always lets its job go.
   */
  private kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    this.cgroup?.killAll();
    if (this.closeDeadline === undefined && !this.closed) {
      this.closeDeadline = setTimeout(() => this.abandonPipes(), this.options.closeDeadlineMs ?? CLOSE_DEADLINE_MS);
      this.timers.push(this.closeDeadline);
    }
  }

  private abandonPipes(): void {
    if (this.closed) return;
    this.unclosed = `its pipes were still open ${this.options.closeDeadlineMs ?? CLOSE_DEADLINE_MS} ms after it was killed (${this.state().channel}); they were destroyed`;
    this.cgroup?.killAll();
    for (const stream of [this.channel, this.child.stdout, this.child.stderr]) stream?.destroy();
    this.closed = true;
    this.maybeSettle();
  }

  private killAfterGrace(): void {
    if (this.closed) return;
    this.timers.push(setTimeout(() => this.kill(), EXIT_GRACE_MS));
  }

  private send(message: ParentMessage, afterSend?: () => void): void {
    if (this.channel.destroyed || !this.channel.writable) {
      afterSend?.();
      return;
    }
    let frame: Buffer;
    try {
      frame = frameOf(encodeValue(message));
    } catch (error) {
      // The handler's value could not be encoded for the child.
      this.decide({ status: 'failed', reason: 'handler-failed', error: `${this.subject}: ${errorMessage(error)}` }, true);
      return;
    }
    // A closed channel (EPIPE, the child died) comes back in the callback: nothing to do then.
    this.channel.write(frame, () => afterSend?.());
  }

  /**
   * Bytes from the child, which may be anything: a frame that is too long, not JSON or not
   * a message of the protocol fails this asset alone (and stops the reading), and no
   * exception of its handling leaves this method.
   */
  private onChannelData(chunk: Buffer): void {
    if (this.verdict !== undefined) return;
    try {
      for (const frame of this.frames.push(chunk)) this.queued.push(frame);
    } catch (error) {
      this.refuseChannel(`sent the worker ${errorMessage(error)}`);
      return;
    }
    void this.pump();
  }

  /** Handles the queued frames in order; while an emit's bytes are stored the channel is paused, so the child waits, not the worker's memory. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queued.length > 0 && this.verdict === undefined) {
        let message: unknown;
        let bytes: { id: number; bytes: Buffer } | undefined;
        try {
          const frame = frameContent(this.queued.shift()!);
          if (frame.kind === 'bytes') bytes = frame;
          else message = decodeValue(frame.json, MAX_CHILD_MESSAGE_DEPTH);
        } catch (error) {
          const why = error instanceof FrameError ? error.message : errorMessage(error).slice(0, 200);
          this.refuseChannel(`sent the worker a message that is not valid (${why})`);
          return;
        }
        try {
          const storing = bytes ? this.onFileBytes(bytes.id, bytes.bytes) : this.onMessage(message);
          if (storing) {
            this.channel.pause();
            await storing;
            if (this.verdict === undefined) this.channel.resume();
          }
        } catch (error) {
          // Whatever a message made go wrong here ends this asset, never the worker.
          this.decide({ status: 'failed', reason: 'handler-failed', error: `${this.subject}: the worker could not handle what it sent (${errorMessage(error)})` }, true);
          return;
        }
      }
    } finally {
      this.pumping = false;
    }
  }

  /** The child broke the protocol: it is killed and its asset fails, naming what it sent. */
  private refuseChannel(what: string): void {
    this.channel.pause();
    this.queued.length = 0;
    this.decide({ status: 'failed', reason: 'protocol', error: `${this.subject} ${what}; the asset was stopped` }, true);
  }

  /** A handler refused: the verdict is taken before the child could hear of it, so user code cannot swallow it. */
  private handlerFailed(error: unknown): void {
    this.decide({ status: 'failed', reason: 'handler-failed', error: errorMessage(error) }, true);
  }

  /** Handles one message; a promise when the next must wait for it (a ctx call's reply being sent). */
  private onMessage(raw: unknown): Promise<void> | undefined {
    if (this.verdict !== undefined) return undefined;
    const parsed = ChildMessageSchema.safeParse(raw);
    if (!parsed.success) {
      const type = raw !== null && typeof raw === 'object' && typeof (raw as { type?: unknown }).type === 'string' ? ` of type "${(raw as { type: string }).type.slice(0, 40)}"` : '';
      this.refuseChannel(`sent the worker a message${type} that it does not accept`);
      return undefined;
    }
    const message = parsed.data;
    switch (message.type) {
      case 'log':
        this.log(message.message);
        return undefined;
      case 'done':
        this.doneReported = true;
        this.killAfterGrace();
        this.maybeSettle();
        return undefined;
      case 'failed':
        this.decide(
          ALLOCATION_FAILED_TEXT.test(message.error.message)
            ? { status: 'failed', reason: 'out-of-memory', error: `${this.subject} ran out of memory (limit ${this.options.sandbox.memoryMb} MB): ${message.error.message}` }
            : { status: 'failed', reason: 'threw', error: userFacingError(message.error, this.childBundleRoot) },
          false,
        );
        return undefined;
      case 'call':
        this.onCall(message.id, message.method, message.arg);
        return undefined;
    }
  }

  /** Bytes of an emit's file: the emit is opened at its first bytes, and each frame stored before the next is read. */
  private onFileBytes(id: number, bytes: Buffer): Promise<void> | undefined {
    if (this.callIds.has(id) || (this.openEmit !== undefined && this.openEmit.id !== id)) {
      this.refuseChannel(this.callIds.has(id) ? `sent file bytes for a call that was already made (id ${id})` : 'sent the files of two emits at once');
      return undefined;
    }
    if (this.openEmit === undefined) {
      if (!this.admitCall()) return undefined;
      try {
        this.openEmit = { id, sink: this.options.handlers.emit() };
      } catch (error) {
        this.handlerFailed(error);
        return undefined;
      }
    }
    return this.openEmit.sink.write(bytes).catch((error: unknown) => this.handlerFailed(error));
  }

  private onCall(id: number, method: 'emit' | 'read' | 'connection', arg: unknown): void {
    if (this.callIds.has(id)) return this.refuseChannel(`made two calls with the same id (${id})`);
    const open = this.openEmit?.id === id ? this.openEmit : undefined;
    let emitArg: z.infer<typeof EmitCallArg> = null;
    if (method === 'emit') {
      const parsed = EmitCallArg.safeParse(arg);
      if (!parsed.success) return this.refuseChannel('sent an emit call with an argument it does not accept');
      emitArg = parsed.data;
    }
    if (open === undefined && !this.admitCall()) return;
    this.callIds.add(id);
    if (open) this.openEmit = undefined;
    const answered = this.answer(id, () => {
      if (method !== 'emit') return this.invoke(id, method, arg);
      if (emitArg !== null) {
        // The child refused its rows (not rows, or not the schema): the emit fails, and so does the asset.
        open?.sink.abort();
        return Promise.reject(new Error(emitArg.error));
      }
      // The child sends at least a file's header and footer, so an emit whose file never came is refused by its sink.
      const sink = open?.sink ?? this.options.handlers.emit();
      return sink.finish().then(() => null);
    }).finally(() => (this.callsInFlight -= 1));
    this.track(answered);
  }

  /** Counts one more call waiting for its answer, or fails the asset past MAX_CALLS_IN_FLIGHT. */
  private admitCall(): boolean {
    if (this.callsInFlight >= MAX_CALLS_IN_FLIGHT) {
      this.refuseChannel(`made more than ${MAX_CALLS_IN_FLIGHT} ctx calls at once (await each one)`);
      return false;
    }
    this.callsInFlight += 1;
    return true;
  }

  /** Runs a handler for a ctx call and replies; a rejection fails the asset and kills the child. */
  private async answer(id: number, work: () => Promise<unknown>): Promise<void> {
    let value: unknown;
    try {
      value = await work();
    } catch (error) {
      const message = errorMessage(error);
      // The verdict is taken before the child hears of it, so user code cannot swallow it.
      if (this.verdict === undefined) this.verdict = { status: 'failed', reason: 'handler-failed', error: message };
      this.send({ type: 'reply', id, ok: false, error: { message } }, () => this.decide(this.verdict!, true));
      return;
    }
    if (this.verdict === undefined) this.send({ type: 'reply', id, ok: true, value });
  }

  private invoke(id: number, method: 'read' | 'connection', arg: unknown): Promise<unknown> {
    const { handlers } = this.options;
    switch (method) {
      case 'read':
        if (typeof arg !== 'string' || arg === '') return Promise.reject(new Error(`${this.subject}: ctx.read takes an asset key`));
        return handlers.read(arg).then((file) => this.sendFile(id, file));
      case 'connection':
        if (typeof arg !== 'string' || arg === '') return Promise.reject(new Error(`${this.subject}: ctx.connection takes a connection name`));
        return handlers.connection(arg);
    }
  }

  /**
   * A file to the child, in frames of bytes under the call's id, ahead of the call's reply
   * (null). Each frame waits for the channel to drain, so a child that does not read holds
   * one frame of the worker's memory, not the file.
   */
  private async sendFile(id: number, file: AsyncIterable<Uint8Array>): Promise<null> {
    for await (const chunk of file) {
      for (let start = 0; start < chunk.byteLength; start += FILE_CHUNK_BYTES) {
        if (this.verdict !== undefined || this.channel.destroyed) throw new Error(`${this.subject} stopped while its upstream was sent to it`);
        if (!this.channel.write(bytesFrameOf(id, chunk.subarray(start, start + FILE_CHUNK_BYTES)))) await drainOf(this.channel);
      }
    }
    return null;
  }

  private track(work: Promise<void>): void {
    this.inFlight.add(work);
    void work.finally(() => {
      this.inFlight.delete(work);
      this.maybeSettle();
    });
  }

  private onDisconnect(): void {
    // Normal after an outcome or on exit; otherwise the child cut its channel and can no
    // longer finish, so it goes (after a grace in which a dying child's exit is seen).
    if (this.verdict === undefined && !this.doneReported && !this.closed) {
      this.timers.push(
        setTimeout(() => {
          if (!this.closed) this.decide({ status: 'failed', reason: 'exited', error: `${this.subject} closed its channel to the worker before finishing` }, true);
        }, EXIT_GRACE_MS),
      );
    }
  }

  private onChildError(error: Error): void {
    if (this.child.pid === undefined) {
      // Spawning failed: there is no process to wait for.
      this.decide({ status: 'failed', reason: 'not-started', error: `${this.subject} could not be started: ${error.message}` }, false);
      this.closed = true;
      this.maybeSettle();
    }
    // Otherwise a failed kill or send, of a child that is going away: its exit decides.
  }

  private onClose(code: number | null, signal: NodeJS.Signals | null): void {
    this.closed = true;
    if (this.exit.code === null && this.exit.signal === null) this.exit = { code, signal };
    this.maybeSettle();
  }

  private maybeSettle(): void {
    if (!this.closed || this.settled) return;
    let outcome: AssetOutcome;
    if (this.verdict !== undefined) outcome = this.verdict;
    else if (this.doneReported) {
      // Success needs every handler call the user code made to have succeeded.
      if (this.inFlight.size > 0) return;
      outcome = { status: 'succeeded' };
    } else outcome = this.exitOutcome();
    this.settled = true;
    // An emit left open (its call never came, or the asset stopped) stores nothing.
    try {
      this.openEmit?.sink.abort();
    } catch {
      // Its spool file is left for the worker's next start to find.
    }
    this.openEmit = undefined;
    for (const timer of this.timers) clearTimeout(timer);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.resolveOutcome(this.unclosed && outcome.status === 'failed' ? { ...outcome, unclosed: this.unclosed } : outcome);
  }

  private state(): SandboxedAssetState {
    const streams = (stream: Readable | Socket | null | undefined) =>
      stream ? `${stream.destroyed ? 'destroyed' : 'open'}${stream.readableEnded ? ',ended' : ''}${stream.readableFlowing === false ? ',paused' : ''}` : 'none';
    return {
      pid: this.child.pid ?? null,
      verdict: this.verdict ? (this.verdict.status === 'succeeded' ? 'succeeded' : this.verdict.reason) : null,
      done_reported: this.doneReported,
      exit_code: this.child.exitCode,
      exit_signal: this.child.signalCode,
      closed: this.closed,
      settled: this.settled,
      calls_in_flight: this.inFlight.size,
      frames_queued: this.queued.length,
      channel: `${streams(this.channel)}; stdout ${streams(this.child.stdout)}; stderr ${streams(this.child.stderr)}`,
    };
  }

  /** Why a child that reported nothing ended. */
  private exitOutcome(): AssetOutcome {
    const { code } = this.exit;
    const signal = signalOfExit(this.options.sandbox, code, this.exit.signal);
    if (OUT_OF_MEMORY_TEXT.test(this.stderrTail)) {
      return { status: 'failed', reason: 'out-of-memory', error: `${this.subject} ran out of memory (limit ${this.options.sandbox.memoryMb} MB)` };
    }
    // The kernel's OOM killer ended it: memory, files in /tmp included, reached its cgroup's cap.
    if ((this.cgroup?.report?.oomKills ?? 0) > 0) {
      const capMb = Math.round(this.cgroup!.memoryLimitBytes / (1024 * 1024));
      return {
        status: 'failed',
        reason: 'out-of-memory',
        error: `${this.subject} ran out of memory (limit ${this.options.sandbox.memoryMb} MB; ${capMb} MB with its files in /tmp and the runtime, and the kernel ended it there)`,
      };
    }
    if (signal === 'SIGXCPU') {
      return { status: 'failed', reason: 'cpu-limit', error: `${this.subject} was killed after using its CPU time limit of ${this.options.sandbox.cpuSeconds} s` };
    }
    if (signal !== null) return { status: 'failed', reason: 'exited', error: `${this.subject} was killed by ${signal} before finishing` };
    return { status: 'failed', reason: 'exited', error: `${this.subject} exited with code ${code ?? 'unknown'} before finishing` };
  }
}

/** Resolves when the socket can take more, or is closed. */
function drainOf(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Calls `onLine` for each line of a stream, and for a last unterminated one. A line longer
 * than MAX_OUTPUT_LINE_CHARS is passed on cut, with a note, and the rest of it up to its
 * newline is dropped and counted: output without newlines holds at most one line's worth
 * of the worker's memory.
 */
export function forwardLines(stream: Readable, onLine: (line: string) => void): void {
  let buffered = '';
  /** Characters dropped so far of a line past the cap; null while the line is within it. */
  let dropped: number | null = null;
  const take = (text: string) => {
    if (dropped !== null) {
      dropped += text.length;
      return;
    }
    const room = MAX_OUTPUT_LINE_CHARS - buffered.length;
    if (text.length <= room) {
      buffered += text;
      return;
    }
    onLine(buffered + text.slice(0, room));
    buffered = '';
    dropped = text.length - room;
  };
  const endLine = () => {
    if (dropped === null) onLine(buffered);
    else onLine(`… (${dropped} more characters of that line, which had no newline within ${MAX_OUTPUT_LINE_CHARS}, were dropped)`);
    buffered = '';
    dropped = null;
  };
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = chunk.split('\n');
    for (let index = 0; index < parts.length - 1; index++) {
      take(parts[index]!);
      endLine();
    }
    take(parts.at(-1)!);
  });
  stream.on('end', () => {
    if (buffered !== '' || dropped !== null) endLine();
  });
  stream.on('error', () => undefined);
}
