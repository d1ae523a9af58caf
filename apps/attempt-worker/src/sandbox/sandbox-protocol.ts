// The messages between the worker (asset-runner.ts) and the sandboxed child
// (asset-child.ts), framed by sandbox-wire.ts. Types only: the worker checks what a child
// sends against its own schema (asset-runner.ts), never trusting these types.

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
    }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: { message: string } };

/**
 * Child → worker. Untrusted (user code can write to the channel's descriptor): the worker
 * validates each one. An emit's rows come first, in `rows` messages of bounded size under
 * the call's id; its `call` (with no argument) then asks for them to be stored.
 */
export type ChildMessage =
  | { type: 'rows'; id: number; rows: unknown[] }
  | { type: 'call'; id: number; method: SandboxCallMethod; arg: unknown }
  | { type: 'log'; message: string }
  | { type: 'done' }
  | { type: 'failed'; error: { message: string; stack?: string } };

/** The descriptor of the channel in the child. */
export const CHANNEL_FD = 3;
/**
 * The largest message a child may send: an emit's rows come in messages of about
 * ROWS_MESSAGE_BYTES (a single row may be larger), and nothing else needs more. The
 * worker refuses a larger announced length before reading any of it.
 */
export const MAX_CHILD_MESSAGE_BYTES = 16 * 1024 * 1024;
/** An emit's rows are sent in messages of about this many bytes (one row larger than it goes alone). */
export const ROWS_MESSAGE_BYTES = 1 << 20;
/** A log line is cut to this many characters in the child, before it is sent. */
export const MAX_LOG_MESSAGE_CHARS = 16_384;
