import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, ManagedProcess } from '@envengine/backing-servers';
import { DEFAULT_RESTART_BACKOFF, nextRestart, Supervisor, type SupervisedProcess } from './supervisor.ts';

describe('restart backoff', () => {
  it('starts at 0.5 s and doubles with each crash in a row, up to 15 s', () => {
    const delays: number[] = [];
    let crashes = 0;
    for (let i = 0; i < 9; i += 1) {
      const next = nextRestart(crashes, 1_000);
      crashes = next.crashesInARow;
      delays.push(next.delayMs);
    }
    expect(delays).toEqual([500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000, 15_000]);
    expect(crashes).toBe(9);
  });

  it('starts over after a run that lasted 30 s', () => {
    expect(nextRestart(6, 29_999)).toEqual({ crashesInARow: 7, delayMs: 15_000 });
    expect(nextRestart(6, 30_000)).toEqual({ crashesInARow: 1, delayMs: 500 });
    expect(nextRestart(0, 0)).toEqual({ crashesInARow: 1, delayMs: 500 });
  });

  it('stays at the cap however long the series', () => {
    expect(nextRestart(5_000, 0)).toEqual({ crashesInARow: 5_001, delayMs: DEFAULT_RESTART_BACKOFF.maxMs });
  });

  it('follows a given policy', () => {
    const policy = { initialMs: 100, maxMs: 350, resetAfterMs: 1_000 };
    expect([0, 1, 2, 3].map((before) => nextRestart(before, 10, policy).delayMs)).toEqual([100, 200, 350, 350]);
    expect(nextRestart(3, 1_000, policy).delayMs).toBe(100);
  });
});

/** Waits for evidence, polling; fails with `what` when it does not come. */
async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Answers the pid of the process that serves it, or undefined when nothing does. */
async function servingPid(port: number): Promise<number | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(1000) });
    return response.status === 200 ? Number(await response.text()) : undefined;
  } catch {
    return undefined;
  }
}

describe('Supervisor, on real processes', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  /** A throwaway HTTP server answering its pid on /readyz, supervised with a quick backoff. */
  async function supervisedServer(
    script: 'server' | 'crasher',
    backoff: { initialMs: number; maxMs: number },
    beforeRestart?: (name: string) => Promise<void>,
  ) {
    const dir = mkdtempSync(join(tmpdir(), 'envengine-supervisor-'));
    const port = await freePort();
    const scripts = {
      server: `require('node:http').createServer((req, res) => {
        res.writeHead(req.url === '/readyz' ? 200 : 404).end(String(process.pid));
      }).listen(Number(process.env.PORT), '127.0.0.1');`,
      crasher: `process.exit(3);`,
    };
    writeFileSync(join(dir, 'main.cjs'), scripts[script]);
    const child = new ManagedProcess({
      name: 'throwaway',
      command: process.execPath,
      args: [join(dir, 'main.cjs')],
      logFile: join(dir, 'logs', 'throwaway.log'),
      env: { PATH: process.env.PATH, PORT: String(port) },
    });
    const lines: string[] = [];
    const supervisor = new Supervisor({ report: (line) => lines.push(line), backoff, readyPollMs: 20, beforeRestart });
    const target: SupervisedProcess = { process: child, ready: async () => (await servingPid(port)) !== undefined };
    supervisor.watch('throwaway', target);
    cleanup.push(async () => {
      await supervisor.stop();
      await child.stop(2_000);
    });
    return { child, port, lines, supervisor, dir };
  }

  // Backoffs long enough that the test acts well within them, short enough to keep it quick.
  const roomy = { initialMs: 200, maxMs: 800 };

  it('restarts a SIGKILLed server with the same settings, logs it, and restarts nothing after stop', async () => {
    const { child, port, lines, supervisor, dir } = await supervisedServer('server', roomy);
    const first = await until('the server to answer', () => servingPid(port));
    expect(first).toBe(child.pid);

    process.kill(first, 'SIGKILL');
    const second = await until('the restarted server to answer', async () => {
      const pid = await servingPid(port);
      return pid !== undefined && pid !== first ? pid : undefined;
    });
    expect(second).toBe(child.pid);
    expect(child.starts).toBe(2);
    expect(supervisor.restarts('throwaway')).toBe(1);
    await until('the back line', () => lines.find((line) => line.startsWith('throwaway is back')));
    expect(lines[0]).toBe(
      `throwaway (pid ${first}) exited unexpectedly with signal SIGKILL; restarting it in 0.2 s (crash 1 in a row); ` +
        `log: ${join(dir, 'logs', 'throwaway.log')}`,
    );
    expect(lines[1]).toMatch(new RegExp(`^throwaway is back \\(pid ${second}\\), ready [\\d.]+ s after its restart$`));

    // Killed again, then the supervisor stops during the (now 0.4 s) backoff: no restart follows.
    process.kill(second, 'SIGKILL');
    await until('the second crash line', () => lines.find((line) => line.includes('crash 2 in a row')));
    await supervisor.stop();
    // Every supervision loop has ended: nothing is left that could restart it.
    expect(supervisor.watching).toBe(0);
    expect(child.running).toBe(false);
    expect(child.starts).toBe(2);
    expect(await servingPid(port)).toBeUndefined();
    expect(lines).toHaveLength(3);
    expect([first, second].filter(isAlive)).toEqual([]);
  });

  it('holds a restart until beforeRestart resolves', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const holding: string[] = [];
    const { child, port, lines } = await supervisedServer('server', { initialMs: 0, maxMs: 0 }, async (name) => {
      holding.push(name);
      await released;
    });
    const first = await until('the server to answer', () => servingPid(port));
    process.kill(first, 'SIGKILL');
    await until('the hold to begin', () => holding.length === 1);
    // No back-off delay at all, yet the process stays down while held.
    expect(holding).toEqual(['throwaway']);
    expect(child.running).toBe(false);
    expect(child.starts).toBe(1);
    release();
    const second = await until('the restarted server to answer', async () => {
      const pid = await servingPid(port);
      return pid !== undefined && pid !== first ? pid : undefined;
    });
    expect(second).toBe(child.pid);
    await until('the back line', () => lines.find((line) => line.startsWith('throwaway is back')));
  });

  it('leaves a process stopped on purpose alone', async () => {
    const { child, port, lines, supervisor } = await supervisedServer('server', roomy);
    const pid = await until('the server to answer', () => servingPid(port));
    expect(supervisor.watching).toBe(1);
    await child.stop();
    expect(child.exitStatus).toEqual({ code: null, signal: 'SIGTERM' });
    // The supervision of that process ends on its own, without a restart.
    await until('its supervision to end', () => supervisor.watching === 0);
    await supervisor.stop();
    expect(child.running).toBe(false);
    expect(child.starts).toBe(1);
    expect(lines).toEqual([]);
    expect(isAlive(pid)).toBe(false);
  });

  it('calls off a pending restart when the process is stopped on purpose during the backoff', async () => {
    const { child, port, lines, supervisor } = await supervisedServer('server', roomy);
    const pid = await until('the server to answer', () => servingPid(port));
    process.kill(pid, 'SIGKILL');
    await until('the crash line', () => lines.find((line) => line.includes('crash 1 in a row')));
    await child.stop();
    // The backoff runs out, and the supervision ends instead of restarting it.
    await until('its supervision to end', () => supervisor.watching === 0);
    expect(child.starts).toBe(1);
    expect(child.running).toBe(false);
    expect(lines).toHaveLength(1);
  });

  it('keeps retrying a process that crashes at every start, at the capped delay', async () => {
    const { child, lines } = await supervisedServer('crasher', { initialMs: 50, maxMs: 200 });
    await until('five crashes in a row', () => lines.find((line) => line.includes('crash 5 in a row')));
    expect(lines.slice(0, 5).map((line) => /restarting it in (\S+) s/.exec(line)?.[1])).toEqual(['0.05', '0.1', '0.2', '0.2', '0.2']);
    expect(lines[0]).toContain('exited unexpectedly with code 3');
    expect(lines.some((line) => line.includes(' is back '))).toBe(false);
    expect(child.starts).toBeGreaterThanOrEqual(5);
  });
});
