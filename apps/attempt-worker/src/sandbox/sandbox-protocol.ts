// The IPC messages between the worker (asset-runner.ts) and the sandboxed child
// (asset-child.ts). Types only: the child loads no npm package (its permission model lets
// it read only its bundle and its own script), so it imports this file with `import type`.

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

/** Child → worker. Untrusted (user code can call `process.send`): the worker validates it. */
export type ChildMessage =
  | { type: 'call'; id: number; method: SandboxCallMethod; arg: unknown }
  | { type: 'log'; message: string }
  | { type: 'done' }
  | { type: 'failed'; error: { message: string; stack?: string } };
