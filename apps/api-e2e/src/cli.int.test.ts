// envctl against the real stack, as a user runs it: the built CLI as a subprocess, its
// stdout parsed with the contracts, its exit codes checked.
import { execFileSync, spawn, type ChildProcessByStdio } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, statSync, utimesSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { ApiToken, ApiTokenCreated, AssetListing, Binding, Deployment, DeploymentDiff, EngineEvent, Environment, Materialization, MaterializationPreview, PoolCredentialIssued, PoolStatus, Quotas, Run, RunLogLine, Schedule, ScheduleNextFireTimes, SecretRow, Webhook, WebhookCreated, WebhookDelivery } from '@envengine/contracts';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { WORKSPACE_ROOT } from '@envengine/dev-stack';
import { decodeParquet } from '@envengine/materialization-storage';
import { createTenant, until, type TestTenant } from '@envengine/test-harness';
import { WebhookReceiver } from './webhook-fixtures.ts';

const stack = inject('stack');
const CLI = join(WORKSPACE_ROOT, 'dist', 'apps', 'cli', 'main.js');
const EXAMPLE = join(WORKSPACE_ROOT, 'examples', 'orders');
const SECRET = `orders-key-${Date.now().toString(36)}-canary`;

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface Invocation {
  input?: string;
  env?: Record<string, string>;
  /** The folder it runs in (default: the test's). */
  cwd?: string;
  /** Called with the child's pid once it runs, before its stdin is written. */
  whileRunning?: (pid: number) => Promise<void> | void;
}

let home: string;
let baseEnv: Record<string, string>;

/** Runs envctl with a clean environment (no terminal, so JSON on stdout) and collects everything. */
function envctl(args: string[], invocation: Invocation = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...baseEnv, ...invocation.env }, cwd: invocation.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    collectOutput(child, resolve, reject);
    void (async () => {
      if (invocation.whileRunning) await invocation.whileRunning(child.pid!);
      child.stdin.end(invocation.input ?? '');
    })().catch(reject);
  });
}

/** Everything a child prints, and its exit code, once it has closed. */
function collectOutput(child: ChildProcessByStdio<Writable | null, Readable, Readable>, resolve: (result: Result) => void, reject: (error: Error) => void): void {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.on('error', reject);
  child.on('close', (code) => resolve({ code, stdout, stderr }));
}

const json = (result: Result) => JSON.parse(result.stdout) as unknown;
const ndjson = (result: Result) => result.stdout.trim().split('\n').map((line) => JSON.parse(line) as unknown);
const DeployResult = z.object({ outcome: z.enum(['ready', 'failed', 'unchanged', 'pending']), bundle_ref: z.string(), uploaded: z.boolean(), deployment: Deployment });
const WatchLine = z.union([z.strictObject({ log: RunLogLine }), z.strictObject({ run: Run })]);

function expectExit(result: Result, code: number): void {
  expect(result.code, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toBe(code);
}

/** A copy of the example project whose files all carry `mtime`. */
function cloneExample(mtime: Date): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'envctl-clone-')), 'orders');
  cpSync(EXAMPLE, dir, { recursive: true });
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) utimesSync(join(entry.parentPath, entry.name), mtime, mtime);
  }
  return dir;
}

/** The example with one more column on `orders`, declared and emitted: a contract change. */
function exampleWithCurrencyColumn(): string {
  const dir = cloneExample(new Date());
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  manifest.assets[1].schema.columns.push({ name: 'currency', type: 'string' });
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2));
  const code = readFileSync(join(dir, 'assets/orders.js'), 'utf8');
  writeFileSync(join(dir, 'assets/orders.js'), code.replace('day: new Date(row.ordered_at).toISOString().slice(0, 10),', '$&\n      currency: reporting,'));
  return dir;
}

async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A word for `sh -c`, quoted. */
const shellWord = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

/**
 * Runs envctl on a pseudo-terminal `columns` wide (util-linux `script`), as a person at a
 * terminal would: stdout and stderr together, as the terminal receives them (escape
 * sequences and carriage returns included).
 */
function envctlOnTerminal(args: string[], columns = 120): Promise<Result> {
  return new Promise((resolve, reject) => {
    const command = `stty cols ${columns} rows 40; exec ${[process.execPath, CLI, ...args].map(shellWord).join(' ')}`;
    const child = spawn('script', ['-qefc', command, '/dev/null'], { env: { ...baseEnv, TERM: 'xterm' }, stdio: ['ignore', 'pipe', 'pipe'] });
    collectOutput(child, resolve, reject);
  });
}

/**
 * Runs envctl with stdout a pipe whose reading end is closed once the first line has come,
 * while envctl has far more to write than a pipe holds: its next writes meet a closed pipe.
 */
function envctlIntoClosedPipe(args: string[]): Promise<Result & { firstLine: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: baseEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString();
      if (!stdout.includes('\n')) return;
      child.stdout.off('data', onData);
      child.stdout.destroy();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, firstLine: stdout.split('\n')[0]! }));
  });
}

/** A project whose assets make the outputs under test: a long log, a thrown error with its stack, a fetch, and a read of an asset never run. */
function outputsProject(): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'envctl-outputs-')), 'outputs');
  const asset = (key: string, deps: string[] = []) => ({ key, binding: 'lake', entry: `assets/${key}.js`, deps });
  const files: Record<string, string> = {
    'manifest.json': JSON.stringify({ version: 1, assets: [asset('chatty'), asset('thrower'), asset('fetcher'), asset('cities'), asset('reader', ['cities'])] }, null, 2),
    'assets/chatty.js': "export default async (ctx) => {\n  for (let i = 0; i < 3000; i += 1) ctx.log(`line ${i} ${'x'.repeat(100)}`);\n  await ctx.emit([{ lines: 3000 }]);\n};\n",
    'assets/thrower.js': "function fail() {\n  throw new Error('boom from thrower');\n}\nexport default async () => {\n  fail();\n};\n",
    'assets/fetcher.js': "export default async (ctx) => {\n  const answer = await fetch('http://example.com/');\n  await ctx.emit([{ status: answer.status }]);\n};\n",
    'assets/cities.js': "export default async (ctx) => {\n  await ctx.emit([{ name: 'Oslo' }]);\n};\n",
    'assets/reader.js': "export default async (ctx) => {\n  await ctx.emit(await ctx.read('cities'));\n};\n",
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe('envctl against the stack', () => {
  let tenant: TestTenant;
  let lake: string;
  let firstDeployment: Deployment;

  beforeAll(async () => {
    expect(statSync(CLI).isFile()).toBe(true);
    tenant = await createTenant(stack, 'cli');
    lake = join(stack.dataDir, 'lake', tenant.tenantId);
    home = mkdtempSync(join(tmpdir(), 'envctl-home-'));
    baseEnv = { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: join(home, '.config'), ENVCTL_URL: stack.gatewayUrl, ENVCTL_TOKEN: tenant.token };
  });

  it('sets up a strict environment, a secret from stdin and a binding, printing JSON that matches the contracts', async () => {
    const created = await envctl(['env', 'create', 'dev', '--storage-prefix', `file://${lake}`, '--executor', 'local', '--strict']);
    expectExit(created, 0);
    expect(Environment.parse(json(created))).toMatchObject({ name: 'dev', strict: true, executor: 'local', active_deployment_id: null });
    expectExit(await envctl(['env', 'create', 'dev', '--storage-prefix', `file://${lake}`, '--executor', 'local']), 1);

    const secret = await envctl(['secrets', 'set', 'orders-api-key', '--env', 'dev'], { input: `${SECRET}\n` });
    expectExit(secret, 0);
    expect(SecretRow.parse(json(secret))).toMatchObject({ name: 'orders-api-key', version: 1 });
    const binding = await envctl(['bindings', 'set', 'warehouse', '--env', 'dev', '--secret-ref', 'api_key=orders-api-key', '--config', '{"reporting_currency":"EUR"}', '--set', 'rates={"USD_EUR":0.92}']);
    expectExit(binding, 0);
    expect(Binding.parse(json(binding))).toMatchObject({ config: { reporting_currency: 'EUR', rates: { USD_EUR: 0.92 } }, secret_refs: { api_key: 'orders-api-key' }, mode: 'live' });

    expect(z.array(Environment).parse(json(await envctl(['env', 'list']))).map((environment) => environment.name)).toEqual(['dev']);
    expect(Quotas.parse(json(await envctl(['quotas']))).environments).toMatchObject({ used: 1 });
    expect(Environment.parse(json(await envctl(['env', 'pause', 'dev', '--reason', 'maintenance'])))).toMatchObject({ schedules_paused: true, schedules_paused_reason: 'maintenance' });
    expect(Environment.parse(json(await envctl(['env', 'resume', 'dev'])))).toMatchObject({ schedules_paused: false, schedules_paused_reason: null });
    expect(z.array(SecretRow).parse(json(await envctl(['secrets', 'list', '--env', 'dev']))).map((row) => row.name)).toEqual(['orders-api-key']);
    expect(z.array(Binding).parse(json(await envctl(['bindings', 'list', '--env', 'dev']))).map((row) => row.name)).toEqual(['warehouse']);
  });

  it('deploys the example: ready and active, with the CLI tag and the sdk version', async () => {
    const deployed = await envctl(['deploy', EXAMPLE, '--env', 'dev']);
    expectExit(deployed, 0);
    const result = DeployResult.parse(json(deployed));
    expect(result).toMatchObject({ outcome: 'ready', uploaded: true });
    expect(result.deployment).toMatchObject({ status: 'ready', active: true, created_by: 'envctl', bundle_ref: result.bundle_ref, validation: { errors: [], warnings: [] } });
    expect(result.deployment.sdk_version).toMatch(/^\d+\.\d+\.\d+/);
    expect(deployed.stderr).toContain('Packed ');
    firstDeployment = result.deployment;
    const viaApi = (await tenant.api.get(`/deployments/${firstDeployment.id}`)).body.data;
    expect(viaApi).toMatchObject({ id: firstDeployment.id, active: true });
  });

  it('says "unchanged" for the same bundle and manifest, from another clone with other mtimes too, and deploys again with --force', async () => {
    const again = await envctl(['deploy', EXAMPLE, '--env', 'dev', '-o', 'table']);
    expectExit(again, 0);
    expect(again.stdout).toContain(`Unchanged: ${firstDeployment.id}`);
    const clone = cloneExample(new Date('2001-02-03T04:05:06Z'));
    const fromClone = DeployResult.parse(json(await envctl(['deploy', clone, '--env', 'dev'])));
    expect(fromClone).toMatchObject({ outcome: 'unchanged', bundle_ref: firstDeployment.bundle_ref, deployment: { id: firstDeployment.id } });
    expect((await tenant.api.get('/environments/dev/deployments')).body.data).toHaveLength(1);

    const forced = DeployResult.parse(json(await envctl(['deploy', EXAMPLE, '--env', 'dev', '--force', '--no-activate'])));
    expect(forced).toMatchObject({ outcome: 'ready', uploaded: false, deployment: { active: false, bundle_ref: firstDeployment.bundle_ref } });
    expect((await tenant.api.get('/environments/dev/deployments')).body.data).toHaveLength(2);
    expect((await tenant.api.get('/environments/dev')).body.data.active_deployment_id).toBe(firstDeployment.id);
  });

  it('packs the same files into the same bundle_ref in two clones with different mtimes, one of them a git checkout', async () => {
    const first = cloneExample(new Date('2010-01-01T00:00:00Z'));
    const second = cloneExample(new Date('2030-12-31T23:59:59Z'));
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: second });
    git('init', '-q', '-b', 'main');
    git('add', '.');
    git('commit', '-q', '-m', 'orders');
    const [a, b] = await Promise.all([envctl(['pack', first]), envctl(['pack', second])]);
    expectExit(a, 0);
    const packed = z.object({ bundle_ref: z.string(), size: z.number(), files: z.array(z.string()) });
    expect(packed.parse(json(a)).bundle_ref).toBe(packed.parse(json(b)).bundle_ref);
    expect(packed.parse(json(a)).bundle_ref).toBe(firstDeployment.bundle_ref);
    expect(packed.parse(json(a)).files).toEqual(['.envctlignore', 'assets/daily_revenue.js', 'assets/orders.js', 'assets/raw_orders.js', 'data/orders.csv', 'lib/csv.js', 'manifest.json', 'package.json']);

    // From the checkout: its branch and commit; an untracked file (ignored by the bundle) marks it dirty.
    const sha = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: second }).toString().trim();
    const clean = DeployResult.parse(json(await envctl(['deploy', second, '--env', 'dev', '--force', '--no-activate'])));
    expect(clean.deployment.git).toEqual({ branch: 'main', sha });
    writeFileSync(join(second, 'notes.log'), 'not packed');
    const dirty = DeployResult.parse(json(await envctl(['deploy', second, '--env', 'dev', '--force', '--no-activate'])));
    expect(dirty).toMatchObject({ bundle_ref: firstDeployment.bundle_ref, deployment: { git: { branch: 'main', sha: `${sha}-dirty` } } });
  });

  it('promotes a deployment to another environment and prints its diff', async () => {
    expect((await tenant.api.post('/environments', { name: 'qa', storage_prefix: `file://${lake}-qa`, executor: 'local' })).status).toBe(201);
    expect((await tenant.api.put('/environments/qa/bindings/warehouse', { config: {} })).status).toBe(201);
    const promoted = await envctl(['deployments', 'promote', firstDeployment.id, '--to', 'qa']);
    expectExit(promoted, 0);
    const row = Deployment.parse(json(promoted));
    expect(row).toMatchObject({ status: 'ready', active: true, promoted_from: firstDeployment.id, bundle_ref: firstDeployment.bundle_ref, git: firstDeployment.git });
    expect((await tenant.api.get('/environments/qa')).body.data.active_deployment_id).toBe(row.id);
    expectExit(await envctl(['deployments', 'promote', firstDeployment.id]), 2);

    // Against nothing (qa's first), then against dev's deployment of the same artifact: nothing changed.
    const first = await envctl(['deployments', 'diff', row.id, '-o', 'table']);
    expectExit(first, 0);
    expect(first.stdout).toContain(`Diff of ${row.id} against nothing`);
    expect(first.stdout).toContain('+ asset daily_revenue');
    expect(first.stdout).toContain('+ file manifest.json');
    const same = DeploymentDiff.parse(json(await envctl(['deployments', 'diff', row.id, '--base', firstDeployment.id])));
    expect(same).toEqual({ base_id: firstDeployment.id, head_id: row.id, assets: [], jobs: [], schedules: [], files: { added: [], removed: [], changed: [] } });
  });

  it('validates a project offline with every problem and its suggestion, as the engine finds them', async () => {
    const valid = await envctl(['validate', EXAMPLE, '-o', 'table']);
    expectExit(valid, 0);
    expect(valid.stdout).toContain('is valid');

    const bad = mkdtempSync(join(tmpdir(), 'envctl-invalid-'));
    writeFileSync(join(bad, 'cities.js'), 'export default async () => {};');
    writeFileSync(join(bad, 'scratch.js'), 'export default async () => {};');
    writeFileSync(join(bad, 'manifest.json'), JSON.stringify({
      version: 1,
      assets: [
        { key: 'cities', binding: 'warehous', entry: 'citys.js', deps: [] },
        { key: 'scratch', binding: 'warehouse', entry: 'scratch.js', deps: ['citys'] },
        { key: 'builder', binding: 'nowhere', entry: 'builder.js', deps: ['scratch', 'cities', 'scrach'] },
      ],
      jobs: [{ name: 'build', assets: ['scrach', 'cities'] }],
      schedules: [{ name: 'nightly', job: 'buld', cron: '0 2 * * *', timezone: 'Europe/Berln' }, { name: 'hourly', job: 'build', cron: '61 * * * *', timezone: 'UTC' }],
    }));
    const offline = await envctl(['validate', bad]);
    expectExit(offline, 1);
    const found = z.object({ valid: z.boolean(), errors: z.array(z.object({ code: z.string(), path: z.string(), message: z.string() })) }).parse(json(offline));
    expect(found.valid).toBe(false);
    const messages = found.errors.map((error) => error.message);
    expect(messages).toEqual(expect.arrayContaining([
      expect.stringContaining('depends on "citys", which is not an asset of this manifest. Did you mean "cities"?'),
      expect.stringContaining('entry "citys.js", which is not a file in the bundle. Did you mean "cities.js"?'),
      expect.stringContaining('names asset "scrach", which is not an asset of this manifest. Did you mean "scratch"?'),
      expect.stringContaining('runs job "buld", which is not a job of this manifest. Did you mean "build"?'),
      expect.stringContaining('(did you mean "Europe/Berlin"?)'),
    ]));
    // Offline, bindings are not known: no unknown_binding.
    expect(found.errors.map((error) => error.code)).not.toContain('unknown_binding');

    // Against the environment: its bindings too, with the command that makes one; and the engine's ingest finds the very same.
    const against = z.object({ errors: z.array(z.object({ code: z.string(), path: z.string(), message: z.string() })) }).parse(json(await envctl(['validate', bad, '--env', 'dev'])));
    expect(against.errors).toEqual(expect.arrayContaining([
      { code: 'unknown_binding', path: 'manifest.assets.0.binding', message: 'Asset "cities" is stored on binding "warehous", which this environment does not have. Did you mean "warehouse"? Make it with `envctl bindings set warehous --env dev`.' },
    ]));
    expect(against.errors.length).toBeGreaterThanOrEqual(10);
    const deployed = await envctl(['deploy', bad, '--env', 'dev', '--no-activate']);
    expectExit(deployed, 1);
    const row = DeployResult.parse(json(deployed)).deployment as Deployment;
    expect(row.validation.errors).toEqual(against.errors);
  });

  it('starts and watches a run to success: NDJSON log lines, then the run', async () => {
    const watched = await envctl(['runs', 'start', '--env', 'dev', '--job', 'refresh', '--watch']);
    expectExit(watched, 0);
    const lines = ndjson(watched).map((line) => WatchLine.parse(line));
    const last = lines[lines.length - 1]!;
    expect('run' in last && last.run.status).toBe('succeeded');
    const logs = lines.flatMap((line) => ('log' in line ? [`${line.log.asset}: ${line.log.message}`] : []));
    expect(logs).toEqual(expect.arrayContaining(['raw_orders: loaded 6 orders from data/orders.csv', 'orders: kept 5 of 6 orders, amounts in EUR']));
    expect(watched.stderr).toMatch(/run_\w+ (queued|running) · attempt 1\/1 on local/);
    const runId = 'run' in last ? last.run.id : '';

    const logsJson = await envctl(['runs', 'logs', runId]);
    expect(ndjson(logsJson).map((line) => RunLogLine.parse(line).message)).toEqual(expect.arrayContaining(['loaded 6 orders from data/orders.csv']));
    const followed = await envctl(['runs', 'logs', runId, '--follow']);
    expectExit(followed, 0);
    expect(followed.stdout).toBe(logsJson.stdout);
    expect(Run.parse(json(await envctl(['runs', 'get', runId]))).status).toBe('succeeded');
    expect(z.array(Run).parse(json(await envctl(['runs', 'list', '--env', 'dev']))).map((run) => run.id)).toContain(runId);
    const table = await envctl(['runs', 'get', runId, '-o', 'table']);
    expect(table.stdout).toMatch(/daily_revenue +succeeded +mat_/);
  });

  it('reads the outputs: assets list, show, download (to a file and to stdout) and preview (JSON, CSV, table)', async () => {
    const assets = z.array(AssetListing).parse(json(await envctl(['assets', 'list', '--env', 'dev'])));
    expect(assets.map((asset) => asset.key)).toEqual(['raw_orders', 'orders', 'daily_revenue']);
    const latest = assets.find((asset) => asset.key === 'daily_revenue')!.latest_materialization!;
    const shown = z.array(Materialization).parse(json(await envctl(['assets', 'show', 'daily_revenue', '--env', 'dev'])));
    expect(shown[0]!.id).toBe(latest.id);
    const stored = readFileSync(fileURLToPath(latest.location!));

    const target = join(mkdtempSync(join(tmpdir(), 'envctl-download-')), 'revenue.parquet');
    const downloaded = await envctl(['assets', 'download', 'daily_revenue', '--env', 'dev', '-o', target]);
    expectExit(downloaded, 0);
    expect(readFileSync(target).equals(stored)).toBe(true);
    expect(downloaded.stderr).toContain(`${stored.byteLength} bytes`);
    // Without -o: the current folder, but in a project folder .envctl/downloads/, which no pack takes along.
    const elsewhere = mkdtempSync(join(tmpdir(), 'envctl-plain-'));
    expectExit(await envctl(['assets', 'download', 'daily_revenue', '--env', 'dev'], { cwd: elsewhere }), 0);
    expect(readdirSync(elsewhere)).toEqual([`daily_revenue-${latest.id}.parquet`]);
    const project = cloneExample(new Date('2020-01-01T00:00:00Z'));
    const intoProject = await envctl(['assets', 'download', 'daily_revenue', '--env', 'dev'], { cwd: project });
    expectExit(intoProject, 0);
    expect(readFileSync(join(project, '.envctl', 'downloads', `daily_revenue-${latest.id}.parquet`)).equals(stored)).toBe(true);
    expect(readdirSync(project)).not.toContain(`daily_revenue-${latest.id}.parquet`);
    expect((json(await envctl(['pack', project])) as { files: string[] }).files.some((file) => file.endsWith('.parquet'))).toBe(false);
    const piped = await envctl(['assets', 'download', 'daily_revenue', '--env', 'dev', '--materialization', latest.id, '-o', '-']);
    expectExit(piped, 0);
    expect(Buffer.from(piped.stdout, 'latin1').subarray(0, 4).toString()).toBe('PAR1');

    const rows = await decodeParquet(new Uint8Array(stored));
    const preview = MaterializationPreview.parse(json(await envctl(['assets', 'preview', 'daily_revenue', '--env', 'dev', '--limit', '2'])));
    expect(preview.rows).toEqual(rows.slice(0, 2));
    const csv = await envctl(['assets', 'preview', 'daily_revenue', '--env', 'dev', '-o', 'csv']);
    expectExit(csv, 0);
    expect(csv.stdout.split('\r\n')).toEqual(['day,orders,revenue', ...rows.map((row) => `${row['day']},${row['orders']},${row['revenue']}`), '']);
    const table = await envctl(['assets', 'preview', 'daily_revenue', '--env', 'dev', '-o', 'table']);
    expect(table.stdout).toMatch(/^day +orders +revenue\n2025-/);
    expect(table.stdout).toContain(`of ${rows.length} rows of daily_revenue ${latest.id}`);

    expectExit(await envctl(['assets', 'preview', 'no_such', '--env', 'dev']), 4);
    // A malformed id is as unknown as a missing one (404): not found, exit 4.
    expectExit(await envctl(['assets', 'download', 'daily_revenue', '--env', 'dev', '--materialization', 'mat_x']), 4);
    expectExit(await envctl(['assets', 'preview', 'daily_revenue', '--env', 'dev', '-o', 'xml']), 2);
  });

  it('refuses a schema change in the strict environment (exit 1, asset and code printed), then accepts it when allowed', async () => {
    const changed = exampleWithCurrencyColumn();
    const refused = await envctl(['deploy', changed, '--env', 'dev', '-o', 'table']);
    expectExit(refused, 1);
    expect(refused.stdout).toMatch(/error +orders +contract_change_not_allowed +Asset "orders" changes its declared columns/);
    // In the terms of the command line: the flag to give, not the API's field.
    expect(refused.stdout).toContain('only when the key is listed in --allow-contract-change');
    expect(refused.stdout).not.toContain('allow_contract_changes');
    expect(refused.stderr).toMatch(/error: deployment_failed: deployment dep_\w+ failed validation/);
    const failedJson = DeployResult.parse(json(await envctl(['deploy', changed, '--env', 'dev'])));
    expect(failedJson).toMatchObject({ outcome: 'failed', deployment: { status: 'failed', active: false } });

    const allowed = await envctl(['deploy', changed, '--env', 'dev', '--allow-contract-change', 'orders']);
    expectExit(allowed, 0);
    const result = DeployResult.parse(json(allowed));
    expect(result.deployment).toMatchObject({ status: 'ready', active: true, allow_contract_changes: ['orders'] });
    // The stored orders lack the new column: the activation re-check quarantines them.
    expect(result.deployment.recheck).toEqual({ checked: 3, quarantined: ['orders'] });

    expectExit(await envctl(['runs', 'start', '--env', 'dev', '--job', 'refresh', '--watch']), 0);
  });

  it('rolls back to the previous ready deployment and prints the re-check report', async () => {
    const before = (await tenant.api.get('/environments/dev')).body.data.active_deployment_id;
    const table = await envctl(['rollback', '--env', 'dev', '-o', 'table']);
    expectExit(table, 0);
    // The previous ready deployment is the last --no-activate one (same bundle as the first).
    expect(table.stdout).toMatch(new RegExp(`Rolled back dev: ${before} → dep_\\w+`));
    expect(table.stdout).toContain('Re-check: 3 assets checked, quarantined: orders.');
    const active = Deployment.parse((await tenant.api.get('/environments/dev/deployments?active=true')).body.data[0]);
    expect(active.bundle_ref).toBe(firstDeployment.bundle_ref);

    const back = await envctl(['rollback', '--env', 'dev', '--to', before]);
    expectExit(back, 0);
    // The orders with the new column were quarantined by the rollback: nothing left to quarantine.
    expect(Deployment.parse(json(back))).toMatchObject({ id: before, active: true, recheck: { checked: 3, quarantined: [] } });
    // Seven deploys, and the failed one of the validate test.
    expect(z.array(Deployment).parse(json(await envctl(['deployments', 'list', '--env', 'dev']))).length).toBe(8);
  });

  it('lists the schedules and previews fire times', async () => {
    const listed = await envctl(['schedules', 'list', '--env', 'dev']);
    expectExit(listed, 0);
    expect(z.array(Schedule).parse(json(listed))).toEqual([
      expect.objectContaining({ name: 'nightly', job: 'refresh', cron: '0 2 * * *', timezone: 'UTC', paused: false, skipped_overlap: 0 }),
    ]);
    const table = await envctl(['schedules', 'list', '--env', 'dev', '-o', 'table']);
    expect(table.stdout).toMatch(/nightly\s+refresh\s+0 2 \* \* \*\s+UTC\s+running/);
    const next = await envctl(['schedules', 'next', 'nightly', '--env', 'dev', '--count', '2', '--after', '2026-03-28T12:00:00Z']);
    expectExit(next, 0);
    expect(ScheduleNextFireTimes.parse(json(next)).next).toEqual(['2026-03-29T02:00:00.000Z', '2026-03-30T02:00:00.000Z']);
    expectExit(await envctl(['schedules', 'next', 'no_such', '--env', 'dev']), 4);
    expectExit(await envctl(['schedules', 'next', 'nightly', '--env', 'dev', '--count', '0']), 2);
  });

  it('watches a failing run to its end: exit 1 and the error on stderr', async () => {
    // Only the mode changes: --keep writes the binding's config and secret refs back as they are.
    const readOnly = await envctl(['bindings', 'set', 'warehouse', '--env', 'dev', '--keep', '--mode', 'read_only']);
    expectExit(readOnly, 0);
    expect(Binding.parse(json(readOnly))).toMatchObject({
      mode: 'read_only',
      config: { reporting_currency: 'EUR', rates: { USD_EUR: 0.92 } },
      secret_refs: { api_key: 'orders-api-key' },
    });
    const nothingToKeep = await envctl(['bindings', 'set', 'no-such-binding', '--env', 'dev', '--keep', '--mode', 'read_only']);
    expectExit(nothingToKeep, 4);
    expect(nothingToKeep.stderr).toContain('there is no binding no-such-binding in dev to keep');
    try {
      const watched = await envctl(['runs', 'start', '--env', 'dev', '--job', 'refresh', '--watch', '-o', 'table']);
      expectExit(watched, 1);
      expect(watched.stdout).toMatch(/Run run_\w+ failed/);
      expect(watched.stdout).toMatch(/raw_orders: asset raw_orders failed: .*binding "warehouse"/);
      // The error is printed once, in the log; the summary and the error line point at it.
      expect(watched.stdout).toContain('Error: attempt 1 of 1: asset raw_orders failed (its error is in the log above)');
      expect(watched.stderr).toMatch(/error: run_failed: run run_\w+ failed \(its error is above\)/);
      const piped = await envctl(['runs', 'start', '--env', 'dev', '--job', 'refresh', '--watch']);
      expectExit(piped, 1);
      // Piped (JSON on stdout), the error line on stderr says what failed.
      expect(piped.stderr).toMatch(/error: run_failed: run run_\w+ failed: .*binding "warehouse"/);
    } finally {
      expectExit(await envctl(['bindings', 'set', 'warehouse', '--env', 'dev', '--secret-ref', 'api_key=orders-api-key', '--config', '{"reporting_currency":"EUR","rates":{"USD_EUR":0.92}}']), 0);
    }
  });

  it('never puts a secret in its process arguments or in any output', async () => {
    const value = `${SECRET}-rotated`;
    let cmdline = '';
    const rotated = await envctl(['secrets', 'set', 'orders-api-key', '--env', 'dev', '-o', 'table'], {
      input: value,
      // stdin is still open here: the process waits for the value.
      // Read once the child has become envctl (its arguments are in place), not after a guess of time.
      whileRunning: async (pid) => {
        cmdline = await until(async () => readFileSync(`/proc/${pid}/cmdline`, 'utf8'), (text) => text.includes('secrets\u0000set'), 10_000, 10);
      },
    });
    expectExit(rotated, 0);
    expect(cmdline).toContain('secrets\u0000set\u0000orders-api-key');
    expect(cmdline).not.toContain(value);
    expect(rotated.stderr).toContain('Rotated secret orders-api-key in dev: version 2.');
    const outputs: Result[] = [rotated, await envctl(['secrets', 'list', '--env', 'dev']), await envctl(['bindings', 'list', '--env', 'dev', '-o', 'table'])];
    for (const output of outputs) expect(output.stdout + output.stderr).not.toContain(SECRET);
    // The run resolves it (raw_orders needs api_key) without ever printing it.
    const run = await envctl(['runs', 'start', '--env', 'dev', '--asset', 'raw_orders', '--watch']);
    expectExit(run, 0);
    expect(run.stdout + run.stderr).not.toContain(SECRET);
  });

  it('answers every exit code: 2 usage, 3 authentication, 4 not found, 5 unreachable (naming the URL), 6 timed out', async () => {
    const usage = await envctl(['deploy', '--env', 'dev', '--colour']);
    expectExit(usage, 2);
    expect(usage.stderr).toMatch(/^error: usage: /);
    expectExit(await envctl(['runs', 'start', '--env', 'dev']), 2);
    expectExit(await envctl(['runs', 'start', '--env', 'dev', '--job', 'nope']), 2);

    const noToken = await envctl(['env', 'list'], { env: { ENVCTL_TOKEN: '' } });
    expectExit(noToken, 3);
    expect(noToken.stderr).toContain('error: missing_token: no API token');
    const badToken = await envctl(['env', 'list'], { env: { ENVCTL_TOKEN: 'eek_not-a-real-token' } });
    expectExit(badToken, 3);
    expect(badToken.stderr).toMatch(/^error: unauthorized: /);
    expect(badToken.stderr).not.toContain('eek_not-a-real-token');

    const missing = await envctl(['env', 'get', 'nope']);
    expectExit(missing, 4);
    expect(missing.stderr).toMatch(/^error: not_found: /);
    expectExit(await envctl(['runs', 'watch', 'run_00000000000000000000000000']), 4);

    const url = `http://127.0.0.1:${await unusedPort()}`;
    const unreachable = await envctl(['env', 'list', '--url', url]);
    expectExit(unreachable, 5);
    expect(unreachable.stderr).toContain(`error: unreachable: cannot reach ${url}`);

    // A remote run with no worker in the pool stays queued: the wait runs out.
    expectExit(await envctl(['env', 'placement', 'dev', 'remote']), 0);
    try {
      const started = Run.parse(json(await envctl(['runs', 'start', '--env', 'dev', '--asset', 'raw_orders'])));
      const timedOut = await envctl(['runs', 'watch', started.id, '--timeout', '1']);
      expectExit(timedOut, 6);
      expect(timedOut.stderr).toContain(`error: timed_out: run ${started.id} was still queued`);
      expect(timedOut.stderr).toContain('waiting for a worker of the pool');
      // Ctrl-C stops the watching, not the run: the status line ends, and it says so (exit 130).
      const interrupted = await new Promise<Result>((resolve, reject) => {
        const child = spawn(process.execPath, [CLI, 'runs', 'watch', started.id], { env: baseEnv, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        let sent = false;
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          // Interrupted once (a second Ctrl-C is the shell's hard stop), when it shows the run's status.
          if (!sent && stderr.includes('queued')) {
            sent = true;
            child.kill('SIGINT');
          }
        });
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
      expectExit(interrupted, 130);
      expect(interrupted.stderr).toMatch(new RegExp(`\nerror: interrupted: stopped watching; run ${started.id} goes on \\(envctl runs watch ${started.id} follows it again\\)\n$`));
      const canceled = await envctl(['runs', 'cancel', started.id]);
      expectExit(canceled, 0);
      expect(Run.parse(json(canceled)).status).toBe('canceled');
      const again = await envctl(['runs', 'cancel', started.id]);
      expectExit(again, 1);
      expect(again.stderr).toMatch(/^error: run_finished: /);
    } finally {
      expectExit(await envctl(['placement', 'set', 'local']), 0);
    }
    expect(PoolStatus.parse(json(await envctl(['pool', 'status']))).workers).toEqual([]);
    // As a table, each list is headed, so an empty one says what is missing.
    const table = await envctl(['pool', 'status', '-o', 'table']);
    expectExit(table, 0);
    expect(table.stdout).toMatch(/Live workers:\n\(none\)\n\nCredentials:\n/);
  });

  it('says what is wrong in the terms of the command line, and never echoes what may be a secret', async () => {
    const secretAsArgument = await envctl(['secrets', 'set', 'API_KEY', '--env', 'dev', 's3cr3t-on-the-command-line']);
    expectExit(secretAsArgument, 2);
    expect(secretAsArgument.stderr).not.toContain('s3cr3t-on-the-command-line');
    expect(secretAsArgument.stderr).toContain('the value is read from stdin');
    expect((await envctl(['secrets', 'list', '--env', 'dev'])).stdout).not.toContain('API_KEY');

    const bareCreate = await envctl(['env', 'create', 'flagless']);
    expectExit(bareCreate, 2);
    expect(bareCreate.stderr).toBe('error: usage: envctl env create needs --executor local|remote; see envctl env create --help\n');
    expectExit(await envctl(['env', 'get', 'flagless']), 4);

    const missingFolder = join(tmpdir(), `envctl-no-such-project-${Date.now()}`);
    const deployNothing = await envctl(['deploy', missingFolder, '--env', 'dev']);
    expectExit(deployNothing, 2);
    expect(deployNothing.stderr).toContain(`the project folder ${missingFolder} does not exist`);
  });

  it('starts a worker of the pool with a saved credential, passed through the environment, and runs a remote attempt on it', async () => {
    const credentialFile = join(mkdtempSync(join(tmpdir(), 'envctl-pool-')), 'worker.json');
    const issued = await envctl(['pool', 'credentials', 'create', '--label', 'cli-test', '--save', credentialFile]);
    expectExit(issued, 0);
    expect(statSync(credentialFile).mode & 0o777).toBe(0o600);
    const credential = PoolCredentialIssued.parse(JSON.parse(readFileSync(credentialFile, 'utf8')));
    expect(issued.stdout + issued.stderr).not.toContain(credential.token);
    expect(json(issued)).toMatchObject({ id: credential.id, saved_to: credentialFile });
    // The credential says where the queues are (the engine's PUBLIC_REDIS_URL, the pool gate; no credential in it).
    expect(credential.redis.url).toBe(stack.poolGateUrl);

    // No --redis-url and no ENVCTL_REDIS_URL: the credential file is all a worker needs.
    const worker = spawn(process.execPath, [CLI, 'worker', 'start', '--credentials', credentialFile, '--name', 'cli-worker'], {
      env: { ...baseEnv, PORT: String(await unusedPort()), HEARTBEAT_INTERVAL_MS: '500' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let workerStderr = '';
    worker.stderr.on('data', (chunk: Buffer) => (workerStderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => worker.on('exit', (code) => resolve(code)));
    try {
      expectExit(await envctl(['env', 'placement', 'dev', 'remote']), 0);
      const live = await until(() => envctl(['pool', 'status']), (result) => PoolStatus.parse(json(result)).workers.some((entry) => entry.name === 'cli-worker'), 30_000, 250);
      expect(PoolStatus.parse(json(live)).credentials.map((entry) => entry.id)).toContain(credential.id);
      // The attempt-worker is envctl's child; neither has the pool token in its arguments.
      const children = readFileSync(`/proc/${worker.pid}/task/${worker.pid}/children`, 'utf8').trim().split(/\s+/);
      expect(children).toHaveLength(1);
      for (const pid of [worker.pid!, Number(children[0])]) expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).not.toContain(credential.token);
      expect(readFileSync(`/proc/${children[0]}/cmdline`, 'utf8')).toContain('--pool');

      const watched = await envctl(['runs', 'start', '--env', 'dev', '--job', 'refresh', '--watch']);
      expectExit(watched, 0);
      const last = WatchLine.parse(ndjson(watched).at(-1));
      expect('run' in last && last.run.attempts[0]).toMatchObject({ executor: 'remote', status: 'succeeded', worker: 'cli-worker' });
    } finally {
      worker.kill('SIGTERM');
      expect(await exited, workerStderr).toBe(0);
      expectExit(await envctl(['placement', 'set', 'local']), 0);
    }
    const revoked = await envctl(['pool', 'credentials', 'revoke', credential.id]);
    expectExit(revoked, 0);
    expect(json(revoked)).toMatchObject({ id: credential.id });
  });

  it('deletes an environment with --yes only, where it cannot ask; the name is free again after it', async () => {
    const created = await envctl(['env', 'create', 'scratch', '--storage-prefix', `file://${lake}-scratch`, '--executor', 'local', '--kind', 'preview', '--ttl-hours', '12', '--max-concurrent-runs', '3']);
    expectExit(created, 0);
    expect(json(created)).toMatchObject({ name: 'scratch', ttl_hours: 12, max_concurrent_runs: 3, status: 'active' });
    const unconfirmed = await envctl(['env', 'delete', 'scratch']);
    expectExit(unconfirmed, 2);
    expect(unconfirmed.stderr).toContain('--yes');
    expectExit(await envctl(['env', 'get', 'scratch']), 0);
    const deleted = await envctl(['env', 'delete', 'scratch', '--yes']);
    expectExit(deleted, 0);
    expect(json(deleted)).toEqual({ name: 'scratch' });
    expectExit(await envctl(['env', 'get', 'scratch']), 4);
    expectExit(await envctl(['env', 'delete', 'scratch', '--yes']), 4);
  });

  it('lists the events of what it did (the deleted environment\'s too), and tails new ones as NDJSON until stopped', async () => {
    const listed = await envctl(['events', 'list', '--env', 'scratch', '--limit', '10']);
    expectExit(listed, 0);
    const scratch = z.array(EngineEvent).parse(json(listed));
    expect(scratch.map((event) => [event.type, event.actor])).toEqual([
      ['environment.deleted', tenant.tokenId],
      ['environment.created', tenant.tokenId],
    ]);
    expectExit(await envctl(['events', 'list', '--type', 'nothing.*']), 2);

    // tail: the last event first, then each new one as it happens.
    const tail = spawn(process.execPath, [CLI, 'events', 'tail', '--last', '1', '--type', 'schedules.*'], { env: baseEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: EngineEvent[] = [];
    let pending = '';
    tail.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const complete = pending.split('\n');
      pending = complete.pop()!;
      for (const line of complete) if (line.trim() !== '') lines.push(EngineEvent.parse(JSON.parse(line)));
    });
    try {
      await until(async () => lines.length, (count) => count === 1, 20_000, 50);
      expect(lines[0]).toMatchObject({ type: 'schedules.resumed', environment: 'dev' });
      expectExit(await envctl(['env', 'pause', 'dev', '--reason', 'tailed']), 0);
      expectExit(await envctl(['env', 'resume', 'dev']), 0);
      await until(async () => lines.length, (count) => count >= 3, 20_000, 50);
      expect(lines.slice(1).map((event) => event.type)).toEqual(['schedules.paused', 'schedules.resumed']);
    } finally {
      tail.kill('SIGINT');
    }
  });

  it('makes a webhook that a receiver verifies, lists it without its secret, shows its deliveries, and deletes it', async () => {
    const receiver = await WebhookReceiver.start();
    try {
      const created = await envctl(['webhooks', 'create', '--target', receiver.url('/cli'), '--event', 'webhook.*', '--event', 'run.failed']);
      expectExit(created, 0);
      const webhook = WebhookCreated.parse(json(created));
      expect(webhook.events).toEqual(['webhook.*', 'run.failed']);
      const listed = await envctl(['webhooks', 'list']);
      expectExit(listed, 0);
      expect(listed.stdout).not.toContain(webhook.secret);
      expect(z.array(Webhook).parse(json(listed)).map((row) => row.id)).toContain(webhook.id);
      const sent = await envctl(['webhooks', 'test', webhook.id]);
      expectExit(sent, 0);
      const [delivery] = await receiver.waitFor('/cli', (deliveries) => deliveries.length >= 1);
      expect(() => new StandardWebhook(webhook.secret).verify(delivery!.body, delivery!.headers as Record<string, string>)).not.toThrow();
      const deliveries = await until(async () => z.array(WebhookDelivery).parse(json(await envctl(['webhooks', 'deliveries', webhook.id]))), (rows) => rows[0]?.status === 'delivered', 20_000, 100);
      expect(deliveries[0]).toMatchObject({ event_type: 'webhook.test', event_id: (json(sent) as { event_id: string }).event_id });
      const table = await envctl(['webhooks', 'deliveries', webhook.id, '--output', 'table']);
      expect(table.stdout).toMatch(/webhook\.test\s+-\s+delivered\s+1\s+200 in \d+ ms/);
      expectExit(await envctl(['webhooks', 'disable', webhook.id]), 0);
      expectExit(await envctl(['webhooks', 'create', '--target', receiver.url('/cli')]), 2);
      expectExit(await envctl(['webhooks', 'create', '--target', 'http://10.1.2.3/x', '--event', '*']), 2);
      expectExit(await envctl(['webhooks', 'delete', webhook.id]), 0);
      expectExit(await envctl(['webhooks', 'delete', webhook.id]), 4);
    } finally {
      await receiver.close();
    }
  });

  it('makes a scoped token, lists it without the token, is refused beyond its scope (exit 3), and revokes it', async () => {
    const created = await envctl(['tokens', 'create', 'dashboard', '--role', 'viewer', '--environment', 'dev*', '--expires-in-days', '30']);
    expectExit(created, 0);
    const token = ApiTokenCreated.parse(json(created));
    expect(token).toMatchObject({ name: 'dashboard', role: 'viewer', environments: ['dev*'] });
    const listed = await envctl(['tokens', 'list']);
    expectExit(listed, 0);
    expect(listed.stdout).not.toContain(token.token);
    expect(z.array(ApiToken).parse(json(listed)).map((row) => row.id)).toContain(token.id);
    const table = await envctl(['tokens', 'list', '--output', 'table']);
    expect(table.stdout).toMatch(new RegExp(`${token.id}\\s+dashboard\\s+viewer\\s+dev\\*`));
    // The viewer reads, and a write is refused with the scope it lacks (exit 3).
    const asViewer = { env: { ENVCTL_TOKEN: token.token } };
    expectExit(await envctl(['env', 'list'], asViewer), 0);
    const refused = await envctl(['env', 'pause', 'dev'], asViewer);
    expectExit(refused, 3);
    expect(refused.stderr).toContain('schedules:write');
    expectExit(await envctl(['tokens', 'create', 'x'], {}), 2);
    expectExit(await envctl(['tokens', 'revoke', token.id]), 0);
    expectExit(await envctl(['env', 'list'], asViewer), 3);
  });

  it('takes the token from a flag over the environment over the config file written by login (mode 0600)', async () => {
    const configHome = mkdtempSync(join(tmpdir(), 'envctl-xdg-'));
    const env = { XDG_CONFIG_HOME: configHome, ENVCTL_TOKEN: '' };
    const login = await envctl(['login'], { env, input: `${tenant.token}\n` });
    expectExit(login, 0);
    const file = join(configHome, 'envctl', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(login.stdout + login.stderr).not.toContain(tenant.token);

    expectExit(await envctl(['env', 'get', 'dev'], { env }), 0);
    expectExit(await envctl(['env', 'get', 'dev'], { env: { ...env, ENVCTL_TOKEN: 'eek_wrong' } }), 3);
    const tokenFile = join(configHome, 'token');
    writeFileSync(tokenFile, `${tenant.token}\n`, { mode: 0o600 });
    expectExit(await envctl(['env', 'get', 'dev', '--token-file', tokenFile], { env: { ...env, ENVCTL_TOKEN: 'eek_wrong' } }), 0);
    const shown = await envctl(['config', 'show', '--token-file', tokenFile], { env: { ...env, ENVCTL_TOKEN: 'eek_wrong' } });
    expect(json(shown)).toEqual({ url: stack.gatewayUrl, url_source: 'environment', token_source: 'flag', config_file: file });
    expect(shown.stdout).not.toContain(tenant.token);

    const refused = await envctl(['login'], { env: { ...env, XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), 'envctl-xdg-')) }, input: 'eek_wrong\n' });
    expectExit(refused, 3);
  });
  describe('output as a person sees it: on a terminal, through a closed pipe, after a typo (issue 61)', () => {
    let chattyRun: string;

    beforeAll(async () => {
      expectExit(await envctl(['env', 'create', 'out', '--storage-prefix', `file://${lake}-out`, '--executor', 'local']), 0);
      expectExit(await envctl(['bindings', 'set', 'lake', '--env', 'out']), 0);
      expectExit(await envctl(['deploy', outputsProject(), '--env', 'out']), 0);
      const chatty = await envctl(['runs', 'start', '--env', 'out', '--asset', 'chatty', '--watch']);
      expectExit(chatty, 0);
      const last = WatchLine.parse(ndjson(chatty).at(-1));
      chattyRun = 'run' in last ? last.run.id : '';
    });

    it('answers a mistyped command in one line with the closest command, not the whole help', async () => {
      for (const [args, suggestion] of [
        [['env', 'lst'], 'unknown command "envctl env lst". Did you mean "envctl env list"? (see envctl env --help)'],
        [['runs', 'strat', '--env', 'out'], 'unknown command "envctl runs strat". Did you mean "envctl runs start"? (see envctl runs --help)'],
      ] as const) {
        const typo = await envctl([...args]);
        expectExit(typo, 2);
        expect(typo.stderr).toBe(`error: usage: ${suggestion}\n`);
      }
      const bare = await envctl(['env']);
      expectExit(bare, 2);
      expect(bare.stderr).toMatch(/^error: usage: "envctl env" needs a subcommand: list, get, create, .*; see envctl env --help\n$/);
    });

    it('suggests an executor for a typo of one, and says what runs start needs in its own terms', async () => {
      const executor = await envctl(['env', 'create', 'typo', '--storage-prefix', `file://${lake}-typo`, '--executor', 'lcoal']);
      expectExit(executor, 2);
      expect(executor.stderr).toBe('error: usage: --executor is "local" or "remote", not "lcoal". Did you mean "local"?\n');
      const placement = await envctl(['env', 'placement', 'out', 'remtoe']);
      expectExit(placement, 2);
      expect(placement.stderr).toContain('Did you mean "remote"?');
      const neither = await envctl(['runs', 'start', '--env', 'out']);
      expectExit(neither, 2);
      expect(neither.stderr).toBe('error: usage: give --job NAME or --asset KEY (one of them)\n');
    });

    it('colours the status cells of assets list and assets show on a terminal, escaping nothing of its own', async () => {
      for (const args of [['assets', 'list', '--env', 'out'], ['assets', 'show', 'chatty', '--env', 'out']]) {
        const shown = await envctlOnTerminal(args);
        expectExit(shown, 0);
        expect(shown.stdout).toMatch(/\u001b\[32mlatest\s*\u001b\[0m/);
        expect(shown.stdout).not.toContain('\\e[');
      }
    });

    it('ends quietly with exit 0 when its stdout is closed by the reader (runs logs ID | head -1), every time', async () => {
      for (let trial = 0; trial < 5; trial += 1) {
        const cut = await envctlIntoClosedPipe(['runs', 'logs', chattyRun]);
        expect(RunLogLine.parse(JSON.parse(cut.firstLine)).message).toMatch(/^line 0 x+$/);
        expect(cut.stderr).not.toContain('EPIPE');
        expect(cut.stderr).toBe('');
        expectExit(cut, 0);
      }
    });

    it('prints a failure once, its stack with real line breaks, in runs start --watch and in runs get', async () => {
      const watched = await envctl(['runs', 'start', '--env', 'out', '--asset', 'thrower', '--watch', '-o', 'table']);
      expectExit(watched, 1);
      const everything = watched.stdout + watched.stderr;
      expect(everything.split('boom from thrower')).toHaveLength(2);
      expect(everything).not.toContain('\\n');
      expect(watched.stdout).toMatch(/thrower: asset thrower failed: Error: boom from thrower\n.* thrower: +at fail \(assets\/thrower\.js:2:9\)\n/);
      expect(watched.stdout).toContain('Error: attempt 1 of 1: asset thrower failed (its error is in the log above)');
      expect(watched.stderr).toMatch(/\nerror: run_failed: run run_\w+ failed \(its error is above\)\n$/);

      const runId = /Run (run_\w+) failed/.exec(watched.stdout)![1]!;
      const shown = await envctl(['runs', 'get', runId, '-o', 'table']);
      expectExit(shown, 0);
      expect(shown.stdout.split('boom from thrower')).toHaveLength(2);
      expect(shown.stdout).not.toContain('\\n');
      expect(shown.stdout).toMatch(/\nError: attempt 1 of 1: asset thrower: Error: boom from thrower\n +at fail \(assets\/thrower\.js:2:9\)\n/);
      expect(shown.stdout).toMatch(/1 +thrower +failed +- +\(above\)/);
    });

    it("says how to allow the network when an asset's fetch fails under egress none", async () => {
      const fetched = await envctl(['runs', 'start', '--env', 'out', '--asset', 'fetcher', '--watch']);
      expectExit(fetched, 1);
      const last = WatchLine.parse(ndjson(fetched).at(-1));
      const error = 'run' in last ? last.run.attempts[0]!.assets[0]!.error : null;
      expect(error).toContain('(environment out has egress none: its assets reach no network; to let them reach public hosts: envctl env set out --egress public)');
    });

    it('says what to run first when ctx.read finds nothing to read', async () => {
      const read = await envctl(['runs', 'start', '--env', 'out', '--asset', 'reader', '--watch']);
      expectExit(read, 1);
      const last = WatchLine.parse(ndjson(read).at(-1));
      expect('run' in last && last.run.attempts[0]!.assets[0]!.error).toContain(
        'ctx.read("cities"): cities has no materialization here yet (or only quarantined ones): run it first (envctl runs start --env out --asset cities)',
      );
    });

    it('warns, naming the bindings, when a deleted secret is one that bindings use', async () => {
      expectExit(await envctl(['secrets', 'set', 'out-key', '--env', 'out'], { input: 'value-of-out-key' }), 0);
      expectExit(await envctl(['bindings', 'set', 'uses-key', '--env', 'out', '--secret-ref', 'token=out-key']), 0);
      const deleted = await envctl(['secrets', 'delete', 'out-key', '--env', 'out']);
      expectExit(deleted, 0);
      expect(json(deleted)).toEqual({ name: 'out-key' });
      expect(deleted.stderr).toBe(
        'warning: binding uses-key uses secret out-key, which is gone: assets fail at ctx.connection until you set it again (envctl secrets set out-key --env out) or change the reference (envctl bindings set uses-key --env out --keep --secret-ref SETTING=SECRET)\n',
      );
      expectExit(await envctl(['bindings', 'delete', 'uses-key', '--env', 'out']), 0);
      expectExit(await envctl(['secrets', 'set', 'unused-key', '--env', 'out'], { input: 'v' }), 0);
      const quiet = await envctl(['secrets', 'delete', 'unused-key', '--env', 'out']);
      expectExit(quiet, 0);
      expect(quiet.stderr).toBe('');
    });

    it("fits the status line of runs watch to the terminal's width, keeping the elapsed time and its unit", async () => {
      expectExit(await envctl(['env', 'placement', 'out', 'remote']), 0);
      try {
        // No worker in the pool: the run stays queued, its line the longest it gets.
        const started = Run.parse(json(await envctl(['runs', 'start', '--env', 'out', '--asset', 'cities'])));
        const watched = await envctlOnTerminal(['runs', 'watch', started.id, '--timeout', '1'], 70);
        expectExit(watched, 6);
        const lines = [...watched.stdout.matchAll(/\r\u001b\[K\u001b\[34m(.*?)\u001b\[0m/g)].map((match) => match[1]!);
        expect(lines.length).toBeGreaterThan(0);
        for (const line of lines) {
          expect(line.length, line).toBeLessThanOrEqual(69);
          expect(line, line).toMatch(new RegExp(`^${started.id} queued · .* · \\d+\\.\\ds$`));
        }
        expectExit(await envctl(['runs', 'cancel', started.id]), 0);
      } finally {
        expectExit(await envctl(['env', 'placement', 'out', 'local']), 0);
      }
    });
  });
});
