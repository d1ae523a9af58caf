import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  loadOrCreateCredentials,
  objectStoreAdmin,
  startStack,
  STACK_PROFILES,
  type BackingServers,
  type RunningServices,
  type RunningStack,
  type StackProfile,
} from '@envengine/dev-stack';

/** The variable `npm test -- --profile cluster` sets: the profile of every test stack that names none. */
export const TEST_PROFILE_VARIABLE = 'ENVENGINE_TEST_PROFILE';

/** The profile of test stacks that name none: `ENVENGINE_TEST_PROFILE`, else embedded. */
export function testProfile(): StackProfile {
  const value = process.env[TEST_PROFILE_VARIABLE] ?? 'embedded';
  if (!(STACK_PROFILES as readonly string[]).includes(value)) throw new Error(`${TEST_PROFILE_VARIABLE} must be one of ${STACK_PROFILES.join(', ')} (got "${value}")`);
  return value as StackProfile;
}

/** What a test needs to reach the stack; plain data, so vitest can hand it to test files. */
export interface StackInfo {
  gatewayUrl: string;
  /** Each gateway's `/metrics` listener (never the public port). */
  gatewayMetricsUrls: string[];
  urls: RunningServices['urls'];
  /** Every replica's URL of each deployable (one each unless the stack was started with `replicas`). */
  replicaUrls: RunningServices['replicaUrls'];
  databases: RunningServices['databases'];
  /** Opens the secrets-service's `/internal/v1`, as the attempt runner does. */
  resolverCredential: string;
  /** The credential the gateway and services share, for calls to internal APIs. */
  internalCredential: string;
  /** The servers' administrator URLs (every database, key and command): tests look behind the API with them. */
  mongoUrl: string;
  redisUrl: string;
  /** Redis's address without a credential: Redis itself, behind the pool gate. */
  redisServerUrl: string;
  /** The pool gate (`redis://`), where pool workers reach their queues: what a pool credential's `redis.url` names. */
  poolGateUrl: string;
  temporalAddress: string;
  /** The task queue of the stack's workflow-worker (its workflows and activities). */
  deploymentsTaskQueue: string;
  /**
   * Every other address a backing server's process listens on (`host:port`), by name: each
   * MongoDB member, each process of the cluster profile's Temporal and its PostgreSQL.
   * With `urls` and the servers' URLs, what no tenant's code may reach.
   */
  serverAddresses: Record<string, string>;
  /** The engine's own object store (when the stack has one): its endpoint, its IAM API (the engine's alone), bucket and administrator keys. */
  objectStore: { url: string; iamUrl: string; bucket: string; accessKeyId: string; secretAccessKey: string } | null;
  dataDir: string;
}

export interface TestStack {
  info: StackInfo;
  servers: BackingServers;
  services: RunningServices;
  reloadCredentials: RunningStack['reloadCredentials'];
  stop(): Promise<void>;
}

export interface TestStackOptions {
  /** Default: `testProfile()`. Replicas and MongoDB members given here win over the profile's. */
  profile?: StackProfile;
  /** Reuse running servers instead of starting new ones (each given one is kept). */
  mongoUrl?: string;
  redisUrl?: string;
  temporalAddress?: string;
  /** Extra environment for the services. */
  env?: Record<string, string>;
  /** Start the object store (SeaweedFS, or S3_URL) too: about ten seconds more. Default false. */
  objectStore?: boolean;
  /** Processes of each deployable (default 1): two gateways, two of each service, two local runners… */
  replicas?: number;
  /** Members of the embedded MongoDB replica set (default 1). */
  mongoMembers?: number;
  /** MongoDB's test commands (`configureFailPoint`), to hold back replication. */
  mongoTestCommands?: boolean;
  /** MongoDB's TTL monitor's period in seconds (MongoDB's default 60): a retention test waits seconds. */
  mongoTtlMonitorSeconds?: number;
}

/**
 * Real servers on free ports in a new temporary directory, and every service started from
 * its built bundle, as the dev stack does. Each call is independent of any other.
 */
export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const dataDir = mkdtempSync(join(tmpdir(), 'envengine-test-'));
  const report = (line: string) => process.stderr.write(`[test-stack] ${line}\n`);
  const stack = await startStack({
    profile: options.profile ?? testProfile(),
    dataDir,
    report,
    ports: 'random',
    mongoUrl: options.mongoUrl ?? process.env.MONGO_URL,
    redisUrl: options.redisUrl ?? process.env.REDIS_URL,
    temporalAddress: options.temporalAddress ?? process.env.TEMPORAL_ADDRESS,
    s3Url: process.env.S3_URL,
    objectStore: options.objectStore ?? false,
    temporalHeadless: true,
    persistRedis: false,
    // Unique databases, so that a stack on a shared server starts empty.
    databasePrefix: `t${Date.now().toString(36)}_`,
    env: options.env,
    replicas: options.replicas,
    mongoMembers: options.mongoMembers,
    mongoTestCommands: options.mongoTestCommands,
    mongoTtlMonitorSeconds: options.mongoTtlMonitorSeconds,
  });
  // Each stack's directory holds its servers' data and logs (hundreds of MB): removed at its
  // stop, so that repeated runs do not fill the disk; KEEP_TEST_DATA=1 keeps it to read the logs.
  const stop = async () => {
    await stack.stop();
    if (!process.env.KEEP_TEST_DATA) await rm(dataDir, { recursive: true, force: true });
  };
  return { info: stackInfoOf(stack, dataDir), servers: stack.servers, services: stack.services, reloadCredentials: stack.reloadCredentials, stop };
}

/** The `StackInfo` of a stack started with `dataDir` (by `startTestStack`, or by the benchmark). */
export function stackInfoOf({ servers, services }: Pick<RunningStack, 'servers' | 'services'>, dataDir: string): StackInfo {
  const admin = servers.s3 ? objectStoreAdmin(loadOrCreateCredentials(dataDir)) : undefined;
  return {
    gatewayUrl: services.gatewayUrl,
    gatewayMetricsUrls: services.gatewayMetricsUrls,
    urls: services.urls,
    replicaUrls: services.replicaUrls,
    databases: services.databases,
    resolverCredential: services.resolverCredential,
    internalCredential: services.internalCredential,
    mongoUrl: servers.mongo.adminUrl,
    redisUrl: servers.redis.adminUrl,
    redisServerUrl: servers.redis.url,
    poolGateUrl: services.poolGateUrl,
    temporalAddress: servers.temporal.url,
    deploymentsTaskQueue: services.deploymentsTaskQueue,
    serverAddresses: Object.fromEntries([
      ...(servers.mongo.members ?? []).map((member, index) => [`mongodb-${index}`, member.host]),
      ...('parts' in servers.temporal ? servers.temporal.parts.map((part) => [part.name, part.address]) : []),
      ...('nodes' in servers.redis ? servers.redis.nodes.map((node) => [node.name, node.address]) : []),
      ...(servers.s3 && servers.s3.iamUrl !== servers.s3.url ? [['s3-iam', new URL(servers.s3.iamUrl).host]] : []),
    ]),
    objectStore:
      servers.s3 && admin ? { url: servers.s3.url, iamUrl: servers.s3.iamUrl, bucket: servers.s3.bucket, ...admin } : null,
    dataDir,
  };
}
