// `npm run bench [-- --suite gateway,secrets] [--profile embedded|cluster|both]`: the product
// against bare baselines, measured in one run on one machine, on the same servers. Every
// target gets the same keep-alive connections, warm-up and duration. `--profile both` runs
// the suites on the embedded stack, then on the cluster profile's.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { issueToken, STACK_PROFILES, startStack, withTokenStore, type StackProfile } from '@envengine/dev-stack';
import { summarizeCpuProfiles } from './cpu-profile-summary.ts';
import { gatewaySuite } from './gateway-suite.ts';
import { fairnessSuite } from './fairness-suite.ts';
import { poolGateSuite } from './pool-gate-suite.ts';
import { lifecycleSuite } from './lifecycle-suite.ts';
import { previewsSuite } from './previews-suite.ts';
import { objectStorageSuite } from './object-storage-suite.ts';
import { Bench } from './harness.ts';
import { deploymentsSuite } from './deployments-suite.ts';
import { runsSuite } from './runs-suite.ts';
import { scaleSuite } from './scale-suite.ts';
import { schedulesSuite } from './schedules-suite.ts';
import { secretsSuite } from './secrets-suite.ts';
import type { SuiteContext } from './suite-context.ts';

const SUITES = {
  gateway: gatewaySuite,
  secrets: secretsSuite,
  deployments: deploymentsSuite,
  scale: scaleSuite,
  runs: runsSuite,
  schedules: schedulesSuite,
  'object-storage': objectStorageSuite,
  lifecycle: lifecycleSuite,
  previews: previewsSuite,
  fairness: fairnessSuite,
  'pool-gate': poolGateSuite,
} as const;

const { values } = parseArgs({
  options: {
    suite: { type: 'string', default: Object.keys(SUITES).join(',') },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
    profile: { type: 'string', default: 'embedded' },
    'cpu-profile': { type: 'boolean', default: false },
  },
});
const profiles: StackProfile[] =
  values.profile === 'both' ? ['embedded', 'cluster'] : (STACK_PROFILES as readonly string[]).includes(values.profile) ? [values.profile as StackProfile] : [];
if (profiles.length === 0) throw new Error(`--profile must be embedded, cluster or both (got "${values.profile}")`);
const cpuProfile = values['cpu-profile'];
const suites = values.suite.split(',').map((name) => {
  if (!(name in SUITES)) throw new Error(`unknown suite ${name}; known: ${Object.keys(SUITES).join(', ')}`);
  return name as keyof typeof SUITES;
});
const bench = new Bench({
  rounds: Number(values.rounds),
  duration: Number(values.duration),
  warmup: Number(values.warmup),
  connections: Number(values.connections),
});

const report = (line: string) => console.error(`bench: ${line}`);
const output: string[] = [];
for (const profile of profiles) {
  const dataDir = mkdtempSync(join(tmpdir(), 'envengine-bench-'));
  report(`profile ${profile}`);
  const stack = await startStack({
    profile,
    dataDir,
    report,
    ports: 'random',
    temporalHeadless: true,
    persistRedis: false,
    // The rate limit would cut the load short; its check still runs on every request.
    env: {
      RATE_LIMIT_PER_SECOND: '10000000',
      RATE_LIMIT_BURST: '10000000',
      // The runs suite's webhook receiver is in the bench process, on the loopback.
      WEBHOOK_TARGETS_ALLOWED: '127.0.0.1',
      ...(cpuProfile ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${join(dataDir, 'profiles')}` } : {}),
    },
  });
  const { servers, services } = stack;
  try {
    const { tenant, token } = await withTokenStore(servers.mongo.adminUrl, services.databases.gateway, (tokens) =>
      issueToken(tokens, 'bench', 'bench'),
    );
    const context: SuiteContext = { stack, profile, dataDir, tenantId: tenant.id, token: token.token, auth: { authorization: `Bearer ${token.token}` } };
    const { connections, warmup, duration } = bench.settings;
    console.error(`measuring: ${connections} connections, ${warmup} s warm-up, ${duration} s each`);
    const members = servers.mongo.members?.length ?? 1;
    output.push(
      ...(profiles.length > 1 ? ['', `## Profile: ${profile}`] : []),
      '',
      `Node ${process.version}, ${connections} keep-alive connections unless said otherwise, ${duration} s per target after ${warmup} s warm-up, MongoDB: ${servers.mongo.source === 'pip' ? `mongod 6.0.5 from the pinned wheel, replica set of ${members}` : servers.mongo.url}, Temporal: ${'parts' in servers.temporal ? 'server 1.29.1 on PostgreSQL, 4 history shards, a process per service' : 'the CLI\'s dev server on SQLite'}, ${services.replicaUrls.gateway.length} replica(s) of each deployable.`,
    );
    for (const suite of suites) output.push('', ...(await SUITES[suite](bench, context)));
  } finally {
    bench.stopBaselines();
    await stack.stop();
  }
  if (cpuProfile) {
    // Profiles are written when the services exit; pids name the files.
    const pids = Object.fromEntries(Object.entries(services.processes).map(([name, child]) => [String(child.pid), name]));
    output.push(`\nCPU self time by owner (--cpu-profile):\n${summarizeCpuProfiles(join(dataDir, 'profiles'))
      .replace(/CPU\.\d+\.\d+\.(\d+)\.\d+\.\d+\.cpuprofile/g, (file, pid: string) => `${pids[pid] ?? file}`)}`);
  }
}
console.log(output.join('\n'));
