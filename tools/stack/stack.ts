// `npm start`: the whole stack on this machine, no Docker needed. A process that dies is
// restarted (with backoff) while the rest keeps serving; Ctrl-C stops it all.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  CLUSTER_PROFILE_DEFAULTS,
  DEFAULT_REDIS_MAX_MEMORY_MB,
  STACK_PROFILES,
  devStackDataDir,
  issueToken,
  metricsBlock,
  removeRunningStackFile,
  startStack,
  superviseStack,
  withTokenStore,
  writeRunningStackFile,
  type StackProfile,
} from '@envengine/dev-stack';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { replicas: { type: 'string' }, profile: { type: 'string', default: 'embedded' } },
});
if (positionals[0] !== 'up') {
  console.error('usage: npm start [-- --profile embedded|cluster] [--replicas N]   (tools/run.sh stack up)');
  process.exit(2);
}
if (!(STACK_PROFILES as readonly string[]).includes(values.profile)) {
  console.error(`--profile must be one of ${STACK_PROFILES.join(', ')} (got "${values.profile}")`);
  process.exit(2);
}
const profile = values.profile as StackProfile;
// Processes of each deployable: with 2, two gateways, two of each service, two workflow-workers
// and two local runners, the replicas after the first on ports 100 above it (docs/operations.md#replicas).
const replicas = Number(values.replicas ?? (profile === 'cluster' ? CLUSTER_PROFILE_DEFAULTS.replicas : 1));
if (!Number.isInteger(replicas) || replicas < 1 || replicas > 9) {
  console.error(`--replicas must be a whole number from 1 to 9 (got "${values.replicas}")`);
  process.exit(2);
}

const started = Date.now();
const dataDir = devStackDataDir();
const redisMaxMemoryMb = Number(process.env.REDIS_MAXMEMORY_MB ?? DEFAULT_REDIS_MAX_MEMORY_MB);
if (!Number.isInteger(redisMaxMemoryMb) || redisMaxMemoryMb < 16) {
  console.error(`REDIS_MAXMEMORY_MB must be a whole number of MiB, at least 16 (got "${process.env.REDIS_MAXMEMORY_MB}")`);
  process.exit(2);
}
// `random`: free ports instead of the defaults, to run a second stack beside one (tests).
const ports = process.env.ENVENGINE_PORTS ?? 'default';
if (ports !== 'default' && ports !== 'random') {
  console.error(`ENVENGINE_PORTS must be "default" or "random" (got "${ports}")`);
  process.exit(2);
}
mkdirSync(dataDir, { recursive: true });
const report = (line: string) => console.log(`envengine: ${line}`);

report(`data directory: ${dataDir} (profile ${profile})`);
const stack = await startStack({
  profile,
  dataDir,
  report,
  ports,
  mongoUrl: process.env.MONGO_URL,
  redisUrl: process.env.REDIS_URL,
  temporalAddress: process.env.TEMPORAL_ADDRESS,
  s3Url: process.env.S3_URL,
  s3IamUrl: process.env.S3_IAM_URL,
  redisMaxMemoryMb,
  replicas,
});
const { servers, services } = stack;
// Supervised from here on: a crashed service or server is logged and restarted with
// backoff while the rest keeps serving.
const supervisor = superviseStack(stack, { report });

for (const server of [servers.mongo, servers.redis, servers.temporal, ...(servers.s3 ? [servers.s3] : [])]) {
  report(`${server.name} ready at ${server.url} (${server.source})`);
}

const { tenant, token } = await withTokenStore(servers.mongo.adminUrl, services.databases.gateway, (tokens) =>
  issueToken(tokens, 'dev', 'dev-stack'),
);
const tokenFile = join(dataDir, 'dev-token');
writeFileSync(tokenFile, `${token.token}\n`, { mode: 0o600 });

console.log(`
envengine is up in ${((Date.now() - started) / 1000).toFixed(1)} s
  Gateway:      ${services.replicaUrls.gateway.map((url) => `${url}/api/v1`).join(', ')}
  Pool gate:    ${services.poolGateUrl} (where pool workers reach their queues; pool credentials name it)
  Temporal UI:  ${servers.temporal.links['Temporal UI'] ?? '(external Temporal: see its own UI)'}
  Object store: ${servers.s3 ? `${servers.s3.url} (bucket "${servers.s3.bucket}": s3://${servers.s3.bucket}/<prefix> with a binding that names no endpoint)` : '(none)'}
  Dev token:    ${token.token}   (tenant "${tenant.name}", also in ${tokenFile})
  Logs:         ${join(dataDir, 'logs')}
  Metrics:      every process's, by its job_name in deploy/prometheus/prometheus.yml (each URL's host:port is a target)
${metricsBlock(services.ports).join('\n')}

  curl -H "Authorization: Bearer ${token.token}" ${services.gatewayUrl}/api/v1/environments

Press Ctrl-C to stop.`);

// `npm run admin -- credentials rotate …` changes a credential on the server, then sends
// SIGHUP here: every service restarts with the credentials now in the data directory.
writeRunningStackFile(dataDir, { pid: process.pid, mongodb: servers.mongo.url, redis: servers.redis.url, gateway: services.gatewayUrl });
let reloading = Promise.resolve();
process.on('SIGHUP', () => {
  reloading = reloading.then(async () => {
    report('credentials changed: restarting the services with them...');
    await stack.reloadCredentials().then(
      () => report('services restarted with the new credentials'),
      (error: Error) => report(`restarting the services failed: ${error.message}`),
    );
  });
});

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  report('stopping services and servers...');
  await supervisor.stop();
  await stack.stop();
  removeRunningStackFile(dataDir);
  report('stopped');
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
