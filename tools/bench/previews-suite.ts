// Previews: what a preview with a parent saves a CI (docs/design.md#previews-promotion-and-diffs).
// Each round makes two previews of the same project and runs its one changed asset,
// `downstream`, whose upstream is slow to make:
//   - branched: a preview with `parent` (bindings, secrets and the upstream's data come
//     from the parent), deployed, and `downstream` run alone;
//   - copied: a bare preview, the parent's bindings and secrets written into it one by one
//     (as a CI does without a parent), deployed, and `upstream` then `downstream` run.
// Both go through the gateway, on the engine's runner; the rounds alternate.
import { ApiClient, makeBundle } from '@envengine/test-harness';
import { median } from './harness.ts';
import type { Bench } from './harness.ts';
import type { SuiteContext } from './suite-context.ts';

const ROUNDS = 5;
const BINDINGS = 5;
const SECRETS = 10;
/** The upstream's own work (a query, an extract): what a branched preview does not repeat. */
const UPSTREAM_WORK_MS = 1500;

const FILES = {
  'assets/upstream.js': `export default async (ctx) => {
    await new Promise((resolve) => setTimeout(resolve, ${UPSTREAM_WORK_MS}));
    await ctx.emit(Array.from({ length: 1000 }, (_, id) => ({ id, amount: id % 97 })));
  };`,
  'assets/downstream.js': `export default async (ctx) => {
    const rows = await ctx.read('upstream');
    await ctx.emit([{ rows: rows.length, total: rows.reduce((sum, row) => sum + row.amount, 0) }]);
  };`,
};
const MANIFEST = {
  version: 1,
  assets: [
    { key: 'upstream', binding: 'b0', entry: 'assets/upstream.js', deps: [] },
    { key: 'downstream', binding: 'b0', entry: 'assets/downstream.js', deps: ['upstream'] },
  ],
};

export async function previewsSuite(_bench: Bench, { stack, dataDir, token }: SuiteContext): Promise<string[]> {
  const api = new ApiClient(`${stack.services.gatewayUrl}/api/v1`, token);
  const must = async (what: string, response: Promise<{ status: number; text: string; body: unknown }>, ...statuses: number[]) => {
    const answer = await response;
    if (!statuses.includes(answer.status)) throw new Error(`${what} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    return answer.body as { data: Record<string, unknown> };
  };
  const runToEnd = async (environment: string, assets: string[]) => {
    const { data } = await must('a run', api.post(`/environments/${environment}/runs`, { assets }), 201);
    for (;;) {
      const { data: run } = await must('reading a run', api.get(`/runs/${data.id as string}`), 200);
      if (run.status === 'succeeded') return;
      if (run.status === 'failed' || run.status === 'canceled') throw new Error(`run ${data.id as string} ${run.status as string}: ${JSON.stringify(run.error)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const secretNames = Array.from({ length: SECRETS }, (_, index) => `s${index}`);
  const bindingBodies = Array.from({ length: BINDINGS }, (_, index) => ({ config: { host: `db-${index}` }, secret_refs: { password: secretNames[index % SECRETS]! } }));

  // The parent: its bindings and secrets, the project, and the upstream made once.
  await must('the parent', api.post('/environments', { name: 'staging', storage_prefix: `file://${dataDir}/lake/staging`, executor: 'local' }), 201);
  for (const name of secretNames) await must('a secret', api.put(`/environments/staging/secrets/${name}`, { value: `value-of-${name}` }), 201);
  for (const [index, body] of bindingBodies.entries()) await must('a binding', api.put(`/environments/staging/bindings/b${index}`, body), 201);
  const uploaded = await must('the bundle', api.request('POST', '/bundles', { raw: await makeBundle(FILES), headers: { 'content-type': 'application/gzip' } }), 200, 201);
  const bundleRef = uploaded.data.bundle_ref as string;
  await must('the deploy', api.post('/environments/staging/deployments', { manifest: MANIFEST, bundle_ref: bundleRef }), 201);
  await runToEnd('staging', ['upstream']);

  const branched = async (name: string) => {
    await must('a preview', api.post('/environments', { name, kind: 'preview', parent: 'staging', executor: 'local' }), 201);
    await must('its deploy', api.post(`/environments/${name}/deployments`, { manifest: MANIFEST, bundle_ref: bundleRef }), 201);
    await runToEnd(name, ['downstream']);
  };
  const copied = async (name: string) => {
    await must('a preview', api.post('/environments', { name, kind: 'preview', storage_prefix: `file://${dataDir}/lake/${name}`, executor: 'local' }), 201);
    for (const secret of secretNames) await must('a copied secret', api.put(`/environments/${name}/secrets/${secret}`, { value: `value-of-${secret}` }), 201);
    for (const [index, body] of bindingBodies.entries()) await must('a copied binding', api.put(`/environments/${name}/bindings/b${index}`, body), 201);
    await must('its deploy', api.post(`/environments/${name}/deployments`, { manifest: MANIFEST, bundle_ref: bundleRef }), 201);
    await runToEnd(name, ['upstream']);
    await runToEnd(name, ['downstream']);
  };
  const timed = async (work: () => Promise<void>) => {
    const started = performance.now();
    await work();
    return performance.now() - started;
  };

  const branchedMs: number[] = [];
  const copiedMs: number[] = [];
  // One uncounted round of each first (connections, JIT, the runner's first sandboxes).
  await branched('warm-branched');
  await copied('warm-copied');
  for (let round = 0; round < ROUNDS; round += 1) {
    branchedMs.push(await timed(() => branched(`pr-b${round}`)));
    copiedMs.push(await timed(() => copied(`pr-c${round}`)));
  }
  for (const name of ['warm-branched', 'warm-copied', ...branchedMs.map((_, round) => `pr-b${round}`), ...copiedMs.map((_, round) => `pr-c${round}`)]) {
    await must('a delete', api.delete(`/environments/${name}?force=true`), 200);
  }
  const [b, c] = [median(branchedMs), median(copiedMs)];
  console.error(`  previews: branched ${b.toFixed(0)} ms, copied ${c.toFixed(0)} ms (${(b / c).toFixed(2)}x)`);
  const list = (values: number[]) => values.map((value) => value.toFixed(0)).join(', ');
  return [
    '## Previews',
    '',
    `A preview of a project whose one changed asset (\`downstream\`) reads an upstream that takes ${UPSTREAM_WORK_MS} ms of its own work, the parent holding ${BINDINGS} bindings and ${SECRETS} secrets; ${ROUNDS} alternating rounds after one uncounted round of each, on the engine's runner:`,
    '',
    '| preview | ms, median (rounds) |',
    '|---|---:|',
    `| with \`parent\`: create, deploy, run \`downstream\` (reads the parent's upstream) | ${b.toFixed(0)} (${list(branchedMs)}) |`,
    `| bare: create, copy ${BINDINGS} bindings and ${SECRETS} secrets, deploy, run \`upstream\` then \`downstream\` | ${c.toFixed(0)} (${list(copiedMs)}) |`,
    '',
    `With a parent: ${(b / c).toFixed(2)}x the time of the copy.`,
  ];
}
