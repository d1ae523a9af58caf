import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runCli } from './cli.ts';
import { loadCliEnvironment } from './config.ts';

const SECRET = 'hunter2-do-not-print';

function harness(stdinText: string | undefined, env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const requests: Array<{ method: string; url: string; body: string | undefined; headers: Record<string, string> }> = [];
  const stdin = Object.assign(Readable.from(stdinText === undefined ? [] : [Buffer.from(stdinText)]), { isTTY: stdinText === undefined });
  const fetchImpl = (async (url: string, init: RequestInit) => {
    requests.push({ method: String(init.method), url, body: init.body as string | undefined, headers: init.headers as Record<string, string> });
    return new Response(JSON.stringify({ data: { name: 'db-password', backend: 'local', version: 1, rotated_at: '2025-01-01T00:00:00.000Z' } }), { status: 201 });
  }) as unknown as typeof fetch;
  const deps = {
    io: { stdout: { write: (text: string) => out.push(text), isTTY: false }, stderr: { write: (text: string) => err.push(text), isTTY: false }, stdin },
    env: loadCliEnvironment({ HOME: '/nonexistent-home', ENVCTL_URL: 'http://engine:8080', ...env }),
    version: '0.0.0-test',
    fetch: fetchImpl,
    sleep: async () => {},
  };
  return { deps, out, err, requests };
}

describe('runCli', () => {
  it('exits 3 with a clear error when there is no token, and sends nothing', async () => {
    const { deps, err, requests } = harness(undefined);
    expect(await runCli(['env', 'list'], deps)).toBe(3);
    expect(err.join('')).toMatch(/^error: missing_token: no API token: set ENVCTL_TOKEN/);
    expect(requests).toEqual([]);
  });

  it('sets a secret from stdin (one trailing newline dropped) and never prints the value', async () => {
    const { deps, out, err, requests } = harness(`${SECRET}\n`, { ENVCTL_TOKEN: 'eek_t' });
    expect(await runCli(['secrets', 'set', 'db-password', '--env', 'prod'], deps)).toBe(0);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ method: 'PUT', url: 'http://engine:8080/api/v1/environments/prod/secrets/db-password' });
    expect(JSON.parse(requests[0]!.body!)).toEqual({ value: SECRET });
    expect(out.join('') + err.join('')).not.toContain(SECRET);
    expect(JSON.parse(out.join(''))).toMatchObject({ name: 'db-password', version: 1 });
  });

  it('never prompts under CI: a terminal on stdin is a usage error for a secret and an auth error for login', async () => {
    const secret = harness(undefined, { ENVCTL_TOKEN: 'eek_t', CI: 'true' });
    expect(await runCli(['secrets', 'set', 'db-password', '--env', 'prod'], secret.deps)).toBe(2);
    expect(secret.err.join('')).toContain('CI is set');
    const login = harness(undefined, { CI: '1' });
    expect(await runCli(['login'], login.deps)).toBe(3);
    expect(secret.requests).toEqual([]);
  });

  it('answers usage errors with exit 2 on stderr, help with exit 0 on stdout', async () => {
    const bad = harness(undefined);
    expect(await runCli(['deploy', '--bogus'], bad.deps)).toBe(2);
    expect(bad.err.join('')).toMatch(/^error: usage: /);
    const help = harness(undefined);
    expect(await runCli(['--help'], help.deps)).toBe(0);
    expect(help.out.join('')).toContain('Exit codes: 0 ok, 1 failed, 2 usage, 3 authentication, 4 not found, 5 unreachable, 6 timed out.');
  });
});
