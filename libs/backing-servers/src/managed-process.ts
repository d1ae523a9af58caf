import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, closeSync } from 'node:fs';
import { dirname } from 'node:path';

export interface ManagedProcessOptions {
  name: string;
  command: string;
  args: string[];
  /** Where stdout and stderr go; created when missing. */
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Run as this user and group (a server that refuses root, such as PostgreSQL). */
  uid?: number;
  gid?: number;
}

/** How a run ended: an exit code, or the signal that ended it. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const running = new Set<ChildProcess>();
// Children live in their own process group, so nothing else ends them if this process
// exits without stopping them (an uncaught error, process.exit): do it here.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * A child process whose output goes to a log file, stopped with SIGTERM then SIGKILL.
 * `respawn()` runs the same command again in the same object, so whoever holds it (a
 * server's `stop()`, a stack's process table) keeps pointing at the live run.
 */
export class ManagedProcess {
  readonly name: string;
  readonly logFile: string;
  private readonly options: ManagedProcessOptions;
  private child!: ChildProcess;
  private exited!: Promise<number | null>;
  private exitCode: number | null | undefined;
  private lastExit: ExitStatus | undefined;
  private stopCalled = false;
  private startCount = 0;

  constructor(options: ManagedProcessOptions) {
    this.name = options.name;
    this.logFile = options.logFile;
    this.options = options;
    this.start();
  }

  private start(): void {
    const { options } = this;
    mkdirSync(dirname(options.logFile), { recursive: true });
    const fd = openSync(options.logFile, 'a');
    const child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      uid: options.uid,
      gid: options.gid,
      stdio: ['ignore', fd, fd],
      // Its own process group: a Ctrl-C in the terminal reaches only the supervisor,
      // which then stops every child in order.
      detached: true,
    });
    closeSync(fd);
    this.child = child;
    this.exitCode = undefined;
    this.lastExit = undefined;
    this.stopCalled = false;
    this.startCount += 1;
    running.add(child);
    this.exited = new Promise((resolve) => {
      const ended = (status: ExitStatus) => {
        running.delete(child);
        // A spawn failure may report twice ('error', then 'exit'): the first one counts.
        if (this.child !== child || this.lastExit) return;
        this.lastExit = status;
        this.exitCode = status.code ?? (status.signal ? 128 : null);
        resolve(this.exitCode);
      };
      child.once('exit', (code, signal) => ended({ code, signal }));
      child.once('error', () => ended({ code: 127, signal: null }));
    });
  }

  /** The current run's pid. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** How the current run ended; undefined while it runs. */
  get exitStatus(): ExitStatus | undefined {
    return this.lastExit;
  }

  /** True once `stop()` was called for the current run: its end is intended, not a crash. */
  get stopRequested(): boolean {
    return this.stopCalled;
  }

  /** How many times the command was started: 1, plus one per `respawn()`. */
  get starts(): number {
    return this.startCount;
  }

  /** Resolves with the current run's exit code when it ends (128 when a signal ended it). */
  waitForExit(): Promise<number | null> {
    return this.exited;
  }

  /** Starts the same command, with the same options, again; the previous run must have ended. */
  respawn(): void {
    if (this.running) throw new Error(`${this.name} (pid ${this.pid}) is still running`);
    this.start();
  }

  async stop(graceMs = 10_000): Promise<void> {
    // Recorded even after the run ended, so that a pending restart of it is called off.
    this.stopCalled = true;
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
