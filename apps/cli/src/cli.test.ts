import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
    return new Response(JSON.stringify({ data: { name: 'db-password', backend: 'local', version: 1, rotated_at: '2025-01-01T00:00:00.000Z', inherited_from: null } }), { status: 201 });
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

describe('env delete', () => {
  /** A harness whose stdin is a terminal (or not) that types `typed`, answering every call with the delete's body. */
  function deleting(typed: string, terminal: boolean, env: Record<string, string> = {}) {
    const base = harness(undefined, { ENVCTL_TOKEN: 'eek_t', ...env });
    const stdin = Object.assign(Readable.from([Buffer.from(typed)]), { isTTY: terminal });
    const requests: Array<{ method: string; url: string }> = [];
    const fetchImpl = (async (url: string, init: RequestInit) => {
      requests.push({ method: String(init.method), url });
      return new Response(JSON.stringify({ data: { name: 'pr-7' } }), { status: 200 });
    }) as unknown as typeof fetch;
    return { deps: { ...base.deps, io: { ...base.deps.io, stdin }, fetch: fetchImpl }, requests, out: base.out, err: base.err };
  }

  it('asks at a terminal and deletes only when the name is typed back', async () => {
    const confirmed = deleting('pr-7\n', true);
    expect(await runCli(['env', 'delete', 'pr-7'], confirmed.deps)).toBe(0);
    expect(confirmed.err.join('')).toContain('Type its name to confirm');
    expect(confirmed.requests).toEqual([{ method: 'DELETE', url: 'http://engine:8080/api/v1/environments/pr-7' }]);
    expect(JSON.parse(confirmed.out.join(''))).toEqual({ name: 'pr-7' });

    const declined = deleting('yes\n', true);
    expect(await runCli(['env', 'delete', 'pr-7'], declined.deps)).toBe(1);
    expect(declined.err.join('')).toContain('nothing was deleted');
    expect(declined.requests).toEqual([]);
  });

  it('needs --yes where it cannot ask (no terminal, or CI), and passes --force and --purge-data on', async () => {
    for (const [terminal, env] of [[false, {}], [true, { CI: 'true' }]] as const) {
      const refused = deleting('pr-7\n', terminal, env);
      expect(await runCli(['env', 'delete', 'pr-7'], refused.deps)).toBe(2);
      expect(refused.err.join('')).toContain('--yes');
      expect(refused.requests).toEqual([]);
    }
    const forced = deleting('', false);
    expect(await runCli(['env', 'delete', 'pr-7', '--yes', '--force', '--purge-data'], forced.deps)).toBe(0);
    expect(forced.requests).toEqual([{ method: 'DELETE', url: 'http://engine:8080/api/v1/environments/pr-7?force=true&purge_data=true' }]);
  });
});

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

describe('login', () => {
  const TOKEN = `eek_${'A1b2C3d4E5'.repeat(4)}xyz`;

  function loggingIn(stdinText: string, fetchImpl?: typeof fetch) {
    const config = mkdtempSync(join(tmpdir(), 'envctl-login-'));
    const base = harness(stdinText, { XDG_CONFIG_HOME: config });
    const requests: Array<Record<string, string>> = [];
    const answering = (async (_url: string, init: RequestInit) => {
      requests.push(init.headers as Record<string, string>);
      return new Response(JSON.stringify({ data: [] }), { status: 200 });
    }) as unknown as typeof fetch;
    return { ...base, deps: { ...base.deps, fetch: fetchImpl ?? answering }, requests, configDir: config };
  }
  const printed = (run: { out: string[]; err: string[] }) => run.out.join('') + run.err.join('');

  it("reads the token out of the admin command's whole output, and never prints it", async () => {
    const adminOutput = `Issued a token for tenant "dev".\ntoken id: tok_01jxyz\ntoken:    ${TOKEN}\nShown once; keep it somewhere safe.\n`;
    const run = loggingIn(adminOutput);
    expect(await runCli(['login'], run.deps)).toBe(0);
    expect(run.requests[0]!['authorization']).toBe(`Bearer ${TOKEN}`);
    expect(readFileSync(join(run.configDir, 'envctl', 'config.json'), 'utf8')).toContain(TOKEN);
    // The scan finds the token where it is (the positive control), and not in what envctl printed.
    expect(adminOutput.includes(TOKEN)).toBe(true);
    expect(printed(run)).not.toContain(TOKEN);
    expect(printed(run)).not.toContain(TOKEN.slice(4, 20));
  });

  it('refuses garbage, a cut token and two tokens, without repeating any of the input', async () => {
    const inputs = [
      'Bearer token id: tok_x\ntoken: eek_cut-short\n',
      `${TOKEN}\n${TOKEN.replace('A1', 'Z9')}\n`,
      `eew_${'p'.repeat(43)}\n`,
      '\n',
    ];
    for (const input of inputs) {
      const run = loggingIn(input);
      expect(await runCli(['login'], run.deps), input).toBe(3);
      expect(run.requests, input).toEqual([]);
      for (const word of input.split(/\s+/).filter((part) => part.length > 6)) expect(printed(run), input).not.toContain(word);
    }
  });

  it('never repeats the token from a network error that quotes the header it refused', async () => {
    const quoting = (async (_url: string, init: RequestInit) => {
      throw new TypeError(`Headers.append: "${(init.headers as Record<string, string>)['authorization']}" is an invalid header value.`);
    }) as unknown as typeof fetch;
    const run = loggingIn(`${TOKEN}\n`, quoting);
    expect(await runCli(['login'], run.deps)).toBe(5);
    expect(printed(run)).toContain('<token>');
    expect(printed(run)).not.toContain(TOKEN);
  });
});

describe('runs start and runs get, while a run waits', () => {
  const queued = (waiting: { worker: boolean; slot: boolean }) => ({
    id: 'run_01',
    environment_id: 'env_01',
    deployment_id: 'dep_01',
    trigger: 'manual',
    schedule: null,
    job: 'refresh',
    assets: ['orders'],
    status: 'queued',
    max_attempts: 1,
    timeout_seconds: 30,
    attempts: [],
    waiting_for_worker: waiting.worker,
    waiting_for_slot: waiting.slot,
    inserted_at: '2026-11-26T10:00:00.000Z',
    started_at: null,
    finished_at: null,
    error: null,
  });
  function answering(body: unknown) {
    const base = harness('', { ENVCTL_TOKEN: 'eek_t' });
    const sent: Array<{ url: string; body: string | undefined }> = [];
    const fetchImpl = (async (url: string, init: RequestInit) => {
      sent.push({ url, body: init.body as string | undefined });
      // What PublicApi declares: a run is created with 201, read with 200.
      return new Response(JSON.stringify({ data: body }), { status: init.method === 'POST' ? 201 : 200 });
    }) as unknown as typeof fetch;
    return { ...base, deps: { ...base.deps, fetch: fetchImpl, now: () => Date.parse('2026-11-26T10:00:27.400Z') }, sent };
  }

  it('warns on runs start when no worker of the pool is live, and sends --time-limit as timeout_seconds', async () => {
    const run = answering(queued({ worker: true, slot: false }));
    expect(await runCli(['runs', 'start', '--env', 'prod', '--job', 'refresh', '--time-limit', '30'], run.deps)).toBe(0);
    expect(JSON.parse(run.sent[0]!.body!)).toEqual({ job: 'refresh', timeout_seconds: 30 });
    expect(run.err.join('')).toContain('warning: no worker of your pool is live: run run_01 waits until one starts');
    const live = answering(queued({ worker: false, slot: false }));
    expect(await runCli(['runs', 'start', '--env', 'prod', '--job', 'refresh'], live.deps)).toBe(0);
    expect(live.err.join('')).not.toContain('warning');
  });

  it('says why a queued run waits in runs get and runs list', async () => {
    const worker = answering(queued({ worker: true, slot: false }));
    expect(await runCli(['runs', 'get', 'run_01', '-o', 'table'], worker.deps)).toBe(0);
    expect(worker.out.join('')).toContain('queued after 27.4s, waiting for a worker of the pool');
    const slot = answering([queued({ worker: false, slot: true })]);
    expect(await runCli(['runs', 'list', '--env', 'prod', '-o', 'table'], slot.deps)).toBe(0);
    expect(slot.out.join('')).toContain('queued, waiting for a slot');
  });
});

describe('an unknown environment', () => {
  it('is 404 with the closest environment name of the caller, asked for only after the 404', async () => {
    const base = harness('', { ENVCTL_TOKEN: 'eek_t' });
    const calls: string[] = [];
    const fetchImpl = (async (url: string) => {
      calls.push(url);
      if (url.endsWith('/api/v1/environments')) {
        const environment = (name: string) => ({ id: `env_${name}`, name, kind: 'persistent', git_ref: null, storage_prefix: name, strict: false, schedules_paused: false, schedules_paused_reason: null, executor: 'local', egress: 'none', active_deployment_id: null, status: 'active', ttl_hours: null, idle_ttl_hours: null, expires_at: null, purge_data_on_expiry: true, max_concurrent_runs: null, parent: null, inserted_at: '2025-01-01T00:00:00.000Z' });
        return new Response(JSON.stringify({ data: [environment('prod'), environment('staging')] }), { status: 200 });
      }
      return new Response(JSON.stringify({ error: { code: 'not_found', message: 'Environment "prdo" was not found.', details: [] } }), { status: 404 });
    }) as unknown as typeof fetch;
    const deps = { ...base.deps, fetch: fetchImpl };
    expect(await runCli(['secrets', 'list', '--env', 'prdo'], deps)).toBe(4);
    expect(base.err.join('')).toContain('Environment "prdo" was not found. Did you mean --env prod?');
    expect(calls.map((url) => url.replace('http://engine:8080/api/v1', ''))).toEqual(['/environments/prdo/secrets', '/environments']);
  });
});
