import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A throwaway `redis-server` for integration tests: no persistence, its own port and directory. */
export interface RedisChild {
  url: string;
  port: number;
  /** Stops the server and starts a fresh one on the same port (ACL users and data are gone). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function launch(port: number, dir: string): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.resume();
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}) during start-up: ${output.slice(-500)}`)));
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export async function startRedisChild(): Promise<RedisChild> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `attempt-queues-redis-${randomBytes(3).toString('hex')}-`));
  let child = await launch(port, dir);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async restart() {
      await stopChild(child);
      child = await launch(port, dir);
    },
    async stop() {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const BASE32 = '0123456789abcdefghjkmnpqrstvwxyz';

/** A fresh id such as `ten_…` (prefix and 26 base32 characters), unique per test. */
export function testId(prefix: 'ten' | 'att' | 'run' | 'pcr'): string {
  return `${prefix}_${[...randomBytes(26)].map((byte) => BASE32[byte % 32]).join('')}`;
}
