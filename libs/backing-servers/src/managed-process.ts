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
}

const running = new Set<ChildProcess>();
// Children live in their own process group, so nothing else ends them if this process
// exits without stopping them (an uncaught error, process.exit): do it here.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** A child process whose output goes to a log file, stopped with SIGTERM then SIGKILL. */
export class ManagedProcess {
  readonly name: string;
  readonly logFile: string;
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;

  constructor(options: ManagedProcessOptions) {
    this.name = options.name;
    this.logFile = options.logFile;
    mkdirSync(dirname(options.logFile), { recursive: true });
    const fd = openSync(options.logFile, 'a');
    this.child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', fd, fd],
      // Its own process group: a Ctrl-C in the terminal reaches only the supervisor,
      // which then stops every child in order.
      detached: true,
    });
    closeSync(fd);
    running.add(this.child);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        running.delete(this.child);
        this.exitCode = code ?? (signal ? 128 : null);
        resolve(this.exitCode);
      });
      this.child.once('error', () => {
        running.delete(this.child);
        this.exitCode = 127;
        resolve(127);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** Resolves with the exit code when the process ends. */
  waitForExit(): Promise<number | null> {
    return this.exited;
  }

  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
