// The messages between the worker (asset-runner.ts) and the sandboxed child
// (asset-child.ts), framed by sandbox-wire.ts. Types only: the worker checks what a child
// sends against its own schema (asset-runner.ts), never trusting these types.
import type { DeclaredSchema } from '@envengine/materialization-storage/codec';

/** The ctx calls the child relays to the worker; each is answered by a `reply`. */
export type SandboxCallMethod = 'emit' | 'read' | 'connection';

/** Worker → child. */
export type ParentMessage =
  | {
      type: 'run';
      /** file: URL of the asset's entry module, already checked to lie inside the bundle. */
      entryUrl: string;
      assetKey: string;
      run: { id: string; attempt: number } | null;
      /** The asset's declared schema, which its emits' files must store; null: each emit's first rows decide. */
      schema: DeclaredSchema | null;
    }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: { message: string } };

/**
 * Child → worker. Untrusted (user code can write to the channel's descriptor): the worker
 * validates each one. An emit's rows are checked and encoded as Parquet in the child; the
 * file's bytes come first, in frames of bytes under the call's id (sandbox-wire.ts), and
 * the emit's `call` then asks for them to be stored (`arg` null), or says why the child
 * refused the rows (`arg` an `EmitRefusal`). An upstream's file comes to the child the
 * same way, ahead of the `read` call's reply.
 */
export type ChildMessage =
  | { type: 'call'; id: number; method: SandboxCallMethod; arg: unknown }
  | { type: 'log'; message: string }
  | { type: 'done' }
  | { type: 'failed'; error: { message: string; stack?: string } };

/** The descriptor of the channel in the child. */
export const CHANNEL_FD = 3;
/** The `arg` of an emit's call whose rows the child refused (not an array of rows, or not the declared schema). */
export interface EmitRefusal {
  error: string;
}

/**
 * The largest frame a child may send: a file's bytes go in frames of FILE_CHUNK_BYTES,
 * and no message needs more (a log line and an error are cut before they are sent). The
 * worker refuses a larger announced length before reading any of it.
 */
export const MAX_CHILD_MESSAGE_BYTES = 4 * 1024 * 1024;
/**
 * The deepest nesting of arrays and objects a child's message may have (every message of
 * the protocol has two or three levels): a deeper one is refused by a scan of its text
 * before it is parsed, so a frame of brackets costs the worker's loop no parse and no reviver.
 */
export const MAX_CHILD_MESSAGE_DEPTH = 16;
/** A file's bytes cross the channel in frames of at most this many. */
export const FILE_CHUNK_BYTES = 1 << 20;
/** An error's message and its stack are each cut to this many characters (in the child before sending, and again by the worker). */
export const MAX_ERROR_CHARS = 64 * 1024;
/** A log line is cut to this many characters in the child, before it is sent. */
export const MAX_LOG_MESSAGE_CHARS = 16_384;
