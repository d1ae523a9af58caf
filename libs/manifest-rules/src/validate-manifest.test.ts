import { describe, expect, it } from 'vitest';
import { ManifestV1 } from '@envengine/contracts';
import type { ValidationContext } from './validation-issue.ts';
import { validateManifest } from './validate-manifest.ts';

/** The example of docs/design.md#manifest, extended to two assets; valid against `context()`. */
function validManifest() {
  return {
    version: 1,
    assets: [
      {
        key: 'raw_orders',
        binding: 'warehouse',
        entry: 'assets/raw_orders.js',
        deps: [],
        schema: {
          columns: [
            { name: 'id', type: 'integer' },
            { name: 'amount', type: 'number', nullable: true },
          ],
        },
      },
      { key: 'orders', binding: 'warehouse', entry: 'assets/orders.js', deps: ['raw_orders'] },
    ],
    jobs: [{ name: 'refresh', assets: ['raw_orders', 'orders'] }],
    schedules: [{ name: 'nightly', job: 'refresh', cron: '0 2 * * *', timezone: 'UTC' }],
  };
}

function context(overrides: Partial<ValidationContext> = {}): ValidationContext {
  return {
    bindings: new Map([
      ['warehouse', { mode: 'live' }],
      ['archive', { mode: 'read_only' }],
    ]),
    bundleEntries: new Set(['assets/raw_orders.js', 'assets/orders.js', 'assets/customers.js']),
    activeManifest: null,
    strict: false,
    allowContractChanges: [],
    ...overrides,
  };
}

const parsed = (manifest: unknown) => ManifestV1.parse(manifest);
// Big inputs check correctness, not speed; the generous limit keeps them steady on a busy machine.
const HEAVY_TEST_TIMEOUT_MS = 30_000;
const codesAndPaths = (issues: ReadonlyArray<{ code: string; path: string }>) =>
  issues.map(({ code, path }) => ({ code, path }));

describe('validateManifest on a valid manifest', () => {
  it('reports nothing and returns the parsed manifest with its defaults', () => {
    const result = validateManifest(validManifest(), context());
    expect(result.errors).toEqual([]);
    expect(result.warnings).toEqual([]);
    expect(result.changedAssets).toEqual([]);
    expect(result.manifest?.assets[0]?.schema?.columns[0]).toEqual({ name: 'id', type: 'integer', nullable: false });
    expect(result.manifest?.assets[1]?.schema).toBeUndefined();
  });

  it('accepts a manifest with no assets and no jobs or schedules', () => {
    expect(validateManifest({ version: 1, assets: [] }, context()).errors).toEqual([]);
  });

  it('defaults deps to [] and timezone to UTC', () => {
    const manifest = validManifest();
    delete (manifest.assets[0] as { deps?: string[] }).deps;
    delete (manifest.schedules[0] as { timezone?: string }).timezone;
    const result = validateManifest(manifest, context());
    expect(result.errors).toEqual([]);
    expect(result.manifest?.assets[0]?.deps).toEqual([]);
    expect(result.manifest?.schedules?.[0]?.timezone).toBe('UTC');
  });

  it('finds entries the archive lists with a leading ./', () => {
    const bundleEntries = new Set(['./assets/raw_orders.js', './assets/orders.js']);
    expect(validateManifest(validManifest(), context({ bundleEntries })).errors).toEqual([]);
  });

  it('accepts an entry written with a leading ./', () => {
    const manifest = validManifest();
    manifest.assets[0]!.entry = './assets/raw_orders.js';
    expect(validateManifest(manifest, context()).errors).toEqual([]);
  });

  it('validates a 2,000-asset dependency chain without error', () => {
    const assets = Array.from({ length: 2000 }, (_, index) => ({
      key: `a${index}`,
      binding: 'warehouse',
      entry: `assets/a${index}.js`,
      deps: index === 0 ? [] : [`a${index - 1}`],
    }));
    const bundleEntries = new Set(assets.map((asset) => asset.entry));
    const result = validateManifest({ version: 1, assets }, context({ bundleEntries }));
    expect(result.errors).toEqual([]);
  }, HEAVY_TEST_TIMEOUT_MS);
});

describe('validateManifest shape errors (manifest_invalid)', () => {
  it('reports a wrong version at manifest.version', () => {
    const result = validateManifest({ ...validManifest(), version: 2 }, context());
    expect(result.errors).toEqual([
      { code: 'manifest_invalid', path: 'manifest.version', message: 'manifest.version must be 1, not 2.' },
    ]);
    expect(result.manifest).toBeNull();
  });

  it('reports each unknown field, at every level, once', () => {
    const manifest = { ...validManifest(), extra: true, other: 1 } as Record<string, unknown>;
    (manifest.assets as Array<Record<string, unknown>>)[1]!.kye = 'x';
    const result = validateManifest(manifest, context());
    expect(codesAndPaths(result.errors)).toEqual([
      { code: 'manifest_invalid', path: 'manifest.assets.1.kye' },
      { code: 'manifest_invalid', path: 'manifest.extra' },
      { code: 'manifest_invalid', path: 'manifest.other' },
    ]);
    expect(result.errors[0]!.message).toBe('manifest.assets.1.kye is not a known field. Did you mean "key"?');
  });

  it("takes an asset's timeout_seconds from 1 to a day, and names a bad one at its path", () => {
    const withTimeout = (timeout: unknown) => {
      const manifest = validManifest() as { assets: Array<Record<string, unknown>> };
      manifest.assets[0]!.timeout_seconds = timeout;
      return validateManifest(manifest, context());
    };
    expect(withTimeout(30).errors).toEqual([]);
    expect(withTimeout(30).manifest!.assets[0]!.timeout_seconds).toBe(30);
    for (const bad of [0, 2.5, 86_401, '30']) {
      expect(codesAndPaths(withTimeout(bad).errors), String(bad)).toEqual([{ code: 'manifest_invalid', path: 'manifest.assets.0.timeout_seconds' }]);
    }
  });

  it('reports each missing required field', () => {
    const result = validateManifest({ version: 1, assets: [{ key: 'a' }] }, context());
    // `binding` may be left out: the asset stores with the engine's own storage.
    expect(result.errors).toEqual([{ code: 'manifest_invalid', path: 'manifest.assets.0.entry', message: 'manifest.assets.0.entry is required.' }]);
  });

  it('names a wrong type and the value received', () => {
    const manifest = validManifest();
    (manifest.assets[1] as Record<string, unknown>).deps = 'raw_orders';
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'manifest_invalid',
        path: 'manifest.assets.1.deps',
        message: 'manifest.assets.1.deps must be an array, not "raw_orders".',
      },
    ]);
  });

  it('names an unknown column type and the allowed ones', () => {
    const manifest = validManifest();
    (manifest.assets[0]!.schema!.columns[0] as { type: string }).type = 'varchar';
    const [error] = validateManifest(manifest, context()).errors;
    expect(error).toEqual({
      code: 'manifest_invalid',
      path: 'manifest.assets.0.schema.columns.0.type',
      message:
        'manifest.assets.0.schema.columns.0.type must be one of "string", "integer", "number", "boolean", "timestamp", "date", "json", not "varchar".',
    });
  });

  it('reports a duplicate column name at the later column', () => {
    const manifest = validManifest();
    manifest.assets[0]!.schema!.columns.push({ name: 'id', type: 'string' });
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'manifest_invalid',
        path: 'manifest.assets.0.schema.columns.2.name',
        message: 'Asset "raw_orders" declares column "id" twice (columns 0 and 2).',
      },
    ]);
  });

  it('reports duplicate job and schedule names', () => {
    const manifest = validManifest();
    manifest.jobs.push({ name: 'refresh', assets: ['orders'] });
    manifest.schedules.push({ name: 'nightly', job: 'refresh', cron: '@daily', timezone: 'UTC' });
    expect(validateManifest(manifest, context()).errors).toEqual([
      { code: 'manifest_invalid', path: 'manifest.jobs.1.name', message: 'Job name "refresh" is used twice (jobs 0 and 1).' },
      {
        code: 'manifest_invalid',
        path: 'manifest.schedules.1.name',
        message: 'Schedule name "nightly" is used twice (schedules 0 and 1).',
      },
    ]);
  });

  it('requires a job to name at least one asset', () => {
    const manifest = validManifest();
    manifest.jobs[0]!.assets = [];
    expect(codesAndPaths(validateManifest(manifest, context()).errors)).toEqual([
      { code: 'manifest_invalid', path: 'manifest.jobs.0.assets' },
    ]);
  });

  it.each([
    ['key', 'bad key'],
    ['key', 'a..b'],
    ['key', ''],
    ['key', 'x'.repeat(64)],
    ['key', '_hidden'],
    ['binding', '../etc'],
    ['entry', ''],
    ['entry', '/etc/passwd'],
    ['entry', 'assets/../../x.js'],
    ['entry', '..'],
    ['entry', 'assets\\x.js'],
  ])('rejects asset %s %j', (field, value) => {
    const manifest = validManifest();
    (manifest.assets[1] as Record<string, unknown>)[field] = value;
    const errors = validateManifest(manifest, context()).errors;
    expect(codesAndPaths(errors)).toEqual([
      { code: 'manifest_invalid', path: `manifest.assets.1.${field}` },
      // Checked in the same pass: with its key changed, "orders" is no asset the job can name.
      ...(field === 'key' ? [{ code: 'unknown_job_asset', path: 'manifest.jobs.0.assets.1' }] : []),
    ]);
    expect(errors[0]!.message).toContain(JSON.stringify(value));
  });

  it.each(['a..b.js', 'assets/x..y/z.js', 'deep/nested/file.mjs'])('accepts entry %j', (entry) => {
    const manifest = validManifest();
    manifest.assets[1]!.entry = entry;
    const result = validateManifest(manifest, context({ bundleEntries: new Set([entry, 'assets/raw_orders.js']) }));
    expect(result.errors).toEqual([]);
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['a string', 'manifest'],
    ['an array', [1, 2]],
    ['undefined', undefined],
  ])('answers for %s as the manifest without throwing', (_, manifest) => {
    const result = validateManifest(manifest, context());
    expect(codesAndPaths(result.errors)).toEqual([{ code: 'manifest_invalid', path: 'manifest' }]);
    expect(result.manifest).toBeNull();
  });

  it('reports 150,000 unknown dependencies without throwing', () => {
    const manifest = validManifest();
    manifest.assets[1]!.deps = Array.from({ length: 150_000 }, (_, index) => `missing${index}`);
    const errors = validateManifest(manifest, context()).errors;
    expect(errors).toHaveLength(150_000);
    expect(errors[149_999]!.path).toBe('manifest.assets.1.deps.149999');
  }, HEAVY_TEST_TIMEOUT_MS);

  it('reports 50,000 shape errors one by one', () => {
    const errors = validateManifest({ version: 1, assets: Array.from({ length: 50_000 }, () => 0) }, context()).errors;
    expect(errors).toHaveLength(50_000);
    expect(errors[0]).toEqual({ code: 'manifest_invalid', path: 'manifest.assets.0', message: 'manifest.assets.0 must be an object, not 0.' });
  }, HEAVY_TEST_TIMEOUT_MS);

  it('answers with one error when nested shape errors are too many to gather', () => {
    const manifest = validManifest();
    (manifest.assets[0]!.schema as { columns: unknown[] }).columns = Array.from({ length: 300_000 }, () => 0);
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'manifest_invalid',
        path: 'manifest',
        message: 'The manifest has too many invalid fields to list; it cannot be checked.',
      },
    ]);
  }, HEAVY_TEST_TIMEOUT_MS);

  it('reports a __proto__ key as an unknown field and pollutes nothing', () => {
    const manifest: unknown = JSON.parse('{"version":1,"assets":[],"__proto__":{"polluted":true}}');
    const result = validateManifest(manifest, context());
    expect(result.errors).toEqual([
      { code: 'manifest_invalid', path: 'manifest.__proto__', message: 'manifest.__proto__ is not a known field.' },
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('handles a manifest that contains itself', () => {
    const manifest: Record<string, unknown> = { version: 1, assets: [] };
    (manifest.assets as unknown[]).push(manifest);
    manifest.self = manifest;
    const result = validateManifest(manifest, context());
    expect(result.errors.length).toBeGreaterThan(0);
    expect(result.errors.every((error) => error.code === 'manifest_invalid')).toBe(true);
  });

  it('answers for a value whose fields cannot be read', () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('no');
        },
        ownKeys() {
          throw new Error('no');
        },
      },
    );
    expect(validateManifest(hostile, context()).errors).toEqual([
      { code: 'manifest_invalid', path: 'manifest', message: 'The manifest could not be read as plain JSON data.' },
    ]);
  });

  it('still reports bundle_not_found and allow-list duplicates, and the reference checks, in the same pass', () => {
    const manifest = { ...validManifest(), version: 3 };
    manifest.assets[1]!.deps = ['nowhere'];
    const result = validateManifest(manifest, context({ bundleEntries: null, allowContractChanges: ['a', 'a'] }));
    expect(codesAndPaths(result.errors)).toEqual([
      { code: 'manifest_invalid', path: 'manifest.version' },
      { code: 'unknown_dependency', path: 'manifest.assets.1.deps.0' },
      { code: 'bundle_not_found', path: 'bundle_ref' },
      { code: 'allow_contract_changes_duplicate', path: 'allow_contract_changes.1' },
    ]);
    expect(result.changedAssets).toEqual([]);
  });

  it('reports four mistakes of four kinds in one pass: a column type, a deps typo, an unknown asset in a job, a bad cron', () => {
    const manifest = validManifest() as unknown as {
      assets: Array<Record<string, unknown> & { schema?: { columns: Array<Record<string, unknown>> } }>;
      jobs: Array<{ name: string; assets: string[] }>;
      schedules: Array<Record<string, unknown>>;
    };
    manifest.assets[0]!.schema!.columns[1]!.type = 'decimal';
    manifest.assets[1]!.deps = ['raw_ordrs'];
    manifest.jobs[0]!.assets.push('reports');
    manifest.schedules[0]!.cron = '0 25 * * *';
    const result = validateManifest(manifest, context());
    expect(codesAndPaths(result.errors)).toEqual([
      { code: 'manifest_invalid', path: 'manifest.assets.0.schema.columns.1.type' },
      { code: 'unknown_dependency', path: 'manifest.assets.1.deps.0' },
      { code: 'unknown_job_asset', path: 'manifest.jobs.0.assets.2' },
      { code: 'invalid_cron', path: 'manifest.schedules.0.cron' },
    ]);
    expect(result.manifest).toBeNull();
  });

  it('does not repeat, as a reference error, a field that already has a shape error', () => {
    const manifest = validManifest() as unknown as { assets: Array<Record<string, unknown>>; schedules: Array<Record<string, unknown>> };
    manifest.assets[1]!.entry = 42;
    manifest.assets[1]!.binding = ['warehouse'];
    manifest.schedules[0]!.cron = 7;
    const result = validateManifest(manifest, context());
    expect(codesAndPaths(result.errors)).toEqual([
      { code: 'manifest_invalid', path: 'manifest.assets.1.binding' },
      { code: 'manifest_invalid', path: 'manifest.assets.1.entry' },
      { code: 'manifest_invalid', path: 'manifest.schedules.0.cron' },
    ]);
  });
});

describe('validateManifest reference errors', () => {
  it('duplicate_asset at the later declaration', () => {
    const manifest = validManifest();
    manifest.assets.push({ key: 'orders', binding: 'warehouse', entry: 'assets/orders.js', deps: [] });
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'duplicate_asset',
        path: 'manifest.assets.2.key',
        message: 'Asset key "orders" is already declared by manifest.assets.1.',
      },
    ]);
  });

  it('unknown_dependency for each unknown dep', () => {
    const manifest = validManifest();
    manifest.assets[1]!.deps = ['raw_orders', 'custmers', 'ghost'];
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'unknown_dependency',
        path: 'manifest.assets.1.deps.1',
        message: 'Asset "orders" depends on "custmers", which is not an asset of this manifest.',
      },
      {
        code: 'unknown_dependency',
        path: 'manifest.assets.1.deps.2',
        message: 'Asset "orders" depends on "ghost", which is not an asset of this manifest.',
      },
    ]);
  });

  it('dependency_cycle once per cycle, at the dep that closes it', () => {
    const manifest = validManifest();
    manifest.assets[0]!.deps = ['orders'];
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'dependency_cycle',
        path: 'manifest.assets.1.deps.0',
        message: 'Asset dependencies form a cycle: raw_orders -> orders -> raw_orders.',
      },
    ]);
  });

  it('dependency_cycle for a self-dependency, listed twice or not', () => {
    const manifest = validManifest();
    manifest.assets[1]!.deps = ['orders', 'raw_orders', 'orders'];
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'dependency_cycle',
        path: 'manifest.assets.1.deps.0',
        message: 'Asset dependencies form a cycle: orders -> orders.',
      },
    ]);
  });

  it('dependency_cycle for every separate cycle', () => {
    const assets = ['a', 'b', 'c', 'd'].map((key) => ({ key, binding: 'warehouse', entry: 'assets/orders.js', deps: [] as string[] }));
    assets[0]!.deps = ['b'];
    assets[1]!.deps = ['a'];
    assets[2]!.deps = ['d'];
    assets[3]!.deps = ['c', 'd'];
    const errors = validateManifest({ version: 1, assets }, context()).errors;
    expect(errors.map((error) => [error.path, error.message])).toEqual([
      ['manifest.assets.1.deps.0', 'Asset dependencies form a cycle: a -> b -> a.'],
      ['manifest.assets.3.deps.0', 'Asset dependencies form a cycle: c -> d -> c.'],
      ['manifest.assets.3.deps.1', 'Asset dependencies form a cycle: d -> d.'],
    ]);
  });

  it('names a long cycle by its ends', () => {
    const assets = Array.from({ length: 2000 }, (_, index) => ({
      key: `a${index}`,
      binding: 'warehouse',
      entry: 'assets/orders.js',
      deps: [`a${(index + 1999) % 2000}`],
    }));
    const errors = validateManifest({ version: 1, assets }, context()).errors;
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('manifest.assets.1.deps.0');
    expect(errors[0]!.message).toBe(
      'Asset dependencies form a cycle: a0 -> a1999 -> a1998 -> a1997 -> a1996 -> a1995 -> a1994 -> a1993 -> a1992 -> a1991 -> … (1980 more) -> a10 -> a9 -> a8 -> a7 -> a6 -> a5 -> a4 -> a3 -> a2 -> a1 -> a0.',
    );
  }, HEAVY_TEST_TIMEOUT_MS);

  it('unknown_binding at the asset binding', () => {
    const manifest = validManifest();
    manifest.assets[1]!.binding = 'whse';
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'unknown_binding',
        path: 'manifest.assets.1.binding',
        message: 'Asset "orders" is stored on binding "whse", which this environment does not have. Make it with `envctl bindings set whse --env ENV`.',
      },
    ]);
  });

  it('bundle_not_found at bundle_ref, and no entry checks without a bundle', () => {
    const result = validateManifest(validManifest(), context({ bundleEntries: null }));
    expect(result.errors).toEqual([
      {
        code: 'bundle_not_found',
        path: 'bundle_ref',
        message: 'The bundle named by bundle_ref was not found; upload it before ingesting.',
      },
    ]);
  });

  it('entry_not_in_bundle at the asset entry', () => {
    const result = validateManifest(validManifest(), context({ bundleEntries: new Set(['assets/raw_orders.js', 'assets/order.js']) }));
    expect(result.errors).toEqual([
      {
        code: 'entry_not_in_bundle',
        path: 'manifest.assets.1.entry',
        message: 'Asset "orders" has entry "assets/orders.js", which is not a file in the bundle. Did you mean "assets/order.js"?',
      },
    ]);
  });

  it('unknown_job_asset at the job asset', () => {
    const manifest = validManifest();
    manifest.jobs[0]!.assets = ['orders', 'customers'];
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'unknown_job_asset',
        path: 'manifest.jobs.0.assets.1',
        message: 'Job "refresh" names asset "customers", which is not an asset of this manifest.',
      },
    ]);
  });

  it('unknown_schedule_job at the schedule job', () => {
    const manifest = validManifest();
    manifest.schedules[0]!.job = 'refrsh';
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'unknown_schedule_job',
        path: 'manifest.schedules.0.job',
        message: 'Schedule "nightly" runs job "refrsh", which is not a job of this manifest. Did you mean "refresh"?',
      },
    ]);
  });

  it('unknown_schedule_job when the manifest has no jobs', () => {
    const manifest: Record<string, unknown> = validManifest();
    delete manifest.jobs;
    expect(codesAndPaths(validateManifest(manifest, context()).errors)).toEqual([
      { code: 'unknown_schedule_job', path: 'manifest.schedules.0.job' },
    ]);
  });

  it('invalid_cron at the schedule cron', () => {
    const manifest = validManifest();
    manifest.schedules[0]!.cron = '61 * * * *';
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'invalid_cron',
        path: 'manifest.schedules.0.cron',
        message: 'Schedule "nightly" has cron "61 * * * *", which is not valid: minute "61" is out of range 0-59.',
      },
    ]);
  });

  it('invalid_cron at the schedule timezone for an unknown zone', () => {
    const manifest = validManifest();
    manifest.schedules[0]!.timezone = 'Mars/Base';
    expect(validateManifest(manifest, context()).errors).toEqual([
      {
        code: 'invalid_cron',
        path: 'manifest.schedules.0.timezone',
        message: 'Schedule "nightly" has time zone "Mars/Base", which is not a known IANA time zone.',
      },
    ]);
  });

  it('accepts Europe/Paris as a time zone', () => {
    const manifest = validManifest();
    manifest.schedules[0]!.timezone = 'Europe/Paris';
    expect(validateManifest(manifest, context()).errors).toEqual([]);
  });

  it('reports every problem, ordered by code and then manifest order', () => {
    const manifest = validManifest();
    manifest.assets.push(
      { key: 'b', binding: 'nowhere', entry: 'missing.js', deps: ['zz', 'b'] },
      { key: 'b', binding: 'archive', entry: 'assets/orders.js', deps: [] },
    );
    manifest.jobs.push({ name: 'other', assets: ['ghost'] });
    manifest.schedules.push({ name: 'broken', job: 'nope', cron: 'x * * * *', timezone: 'Mars/Base' });
    const result = validateManifest(manifest, context());
    expect(codesAndPaths(result.errors)).toEqual([
      { code: 'duplicate_asset', path: 'manifest.assets.3.key' },
      { code: 'unknown_dependency', path: 'manifest.assets.2.deps.0' },
      { code: 'dependency_cycle', path: 'manifest.assets.2.deps.1' },
      { code: 'unknown_binding', path: 'manifest.assets.2.binding' },
      { code: 'entry_not_in_bundle', path: 'manifest.assets.2.entry' },
      { code: 'unknown_job_asset', path: 'manifest.jobs.1.assets.0' },
      { code: 'unknown_schedule_job', path: 'manifest.schedules.1.job' },
      { code: 'invalid_cron', path: 'manifest.schedules.1.cron' },
      { code: 'invalid_cron', path: 'manifest.schedules.1.timezone' },
    ]);
    expect(codesAndPaths(result.warnings)).toEqual([{ code: 'read_only_binding', path: 'manifest.assets.3.binding' }]);
  });
});

describe('validateManifest warnings', () => {
  it('read_only_binding for an asset stored on a read_only binding', () => {
    const manifest = validManifest();
    manifest.assets[1]!.binding = 'archive';
    const result = validateManifest(manifest, context());
    expect(result.errors).toEqual([]);
    expect(result.warnings).toEqual([
      {
        code: 'read_only_binding',
        path: 'manifest.assets.1.binding',
        message: 'Asset "orders" is stored on binding "archive", which is read_only, so its emits will fail.',
      },
    ]);
  });

  it('asset_removed for each active asset missing from the new manifest', () => {
    const active = parsed({
      ...validManifest(),
      assets: [
        ...validManifest().assets,
        { key: 'customers', binding: 'warehouse', entry: 'assets/customers.js' },
        { key: 'legacy', binding: 'warehouse', entry: 'assets/customers.js' },
      ],
    });
    const result = validateManifest(validManifest(), context({ activeManifest: active }));
    expect(result.errors).toEqual([]);
    expect(result.warnings).toEqual([
      {
        code: 'asset_removed',
        path: 'manifest.assets',
        message: 'Asset "customers" of the active deployment is not in this manifest, so this deployment will not materialize it.',
      },
      {
        code: 'asset_removed',
        path: 'manifest.assets',
        message: 'Asset "legacy" of the active deployment is not in this manifest, so this deployment will not materialize it.',
      },
    ]);
  });
});

describe('validateManifest contract changes', () => {
  /** The valid manifest with raw_orders.amount made not nullable, and orders given a schema. */
  function changedManifest() {
    const manifest = validManifest();
    manifest.assets[0]!.schema!.columns[1]!.nullable = false;
    (manifest.assets[1] as Record<string, unknown>).schema = { columns: [{ name: 'total', type: 'number' }] };
    return manifest;
  }
  const active = () => parsed(validManifest());

  it('nothing changes without an active deployment', () => {
    const result = validateManifest(changedManifest(), context({ strict: true }));
    expect(result.changedAssets).toEqual([]);
    expect(result.errors).toEqual([]);
  });

  it('column order and an explicit nullable: false are not changes', () => {
    const manifest = validManifest();
    manifest.assets[0]!.schema!.columns.reverse();
    (manifest.assets[0]!.schema!.columns[1] as { nullable?: boolean }).nullable = false;
    const result = validateManifest(manifest, context({ strict: true, activeManifest: active() }));
    expect(result.changedAssets).toEqual([]);
    expect(result.errors).toEqual([]);
  });

  it('a new asset is not a change', () => {
    const manifest = validManifest();
    manifest.assets.push({
      key: 'customers',
      binding: 'warehouse',
      entry: 'assets/customers.js',
      deps: [],
      schema: { columns: [{ name: 'id', type: 'integer' }] },
    } as (typeof manifest.assets)[number]);
    const result = validateManifest(manifest, context({ strict: true, activeManifest: active() }));
    expect(result.changedAssets).toEqual([]);
    expect(result.errors).toEqual([]);
  });

  it('non-strict: contract_changed warning per changed asset, in manifest order', () => {
    const result = validateManifest(changedManifest(), context({ activeManifest: active() }));
    expect(result.changedAssets).toEqual(['raw_orders', 'orders']);
    expect(result.errors).toEqual([]);
    expect(result.warnings).toEqual([
      {
        code: 'contract_changed',
        path: 'manifest.assets.0.schema',
        message: 'Asset "raw_orders" declares a different set of columns than the active deployment.',
      },
      {
        code: 'contract_changed',
        path: 'manifest.assets.1.schema',
        message: 'Asset "orders" declares a different set of columns than the active deployment.',
      },
    ]);
  });

  it('strict: contract_change_not_allowed for each changed asset not listed', () => {
    const result = validateManifest(
      changedManifest(),
      context({ strict: true, activeManifest: active(), allowContractChanges: ['orders'] }),
    );
    expect(result.warnings).toEqual([]);
    expect(result.errors).toEqual([
      {
        code: 'contract_change_not_allowed',
        path: 'manifest.assets.0.schema',
        message:
          'Asset "raw_orders" changes its declared columns, which this strict environment accepts only when the key is listed in allow_contract_changes.',
      },
    ]);
  });

  it('strict: listing every changed asset accepts the change', () => {
    const result = validateManifest(
      changedManifest(),
      context({ strict: true, activeManifest: active(), allowContractChanges: ['orders', 'raw_orders'] }),
    );
    expect(result.errors).toEqual([]);
    expect(result.warnings).toEqual([]);
    expect(result.changedAssets).toEqual(['raw_orders', 'orders']);
  });

  it('removing a schema is a change', () => {
    const manifest = validManifest();
    delete (manifest.assets[0] as { schema?: unknown }).schema;
    const result = validateManifest(manifest, context({ strict: true, activeManifest: active() }));
    expect(result.changedAssets).toEqual(['raw_orders']);
    expect(codesAndPaths(result.errors)).toEqual([{ code: 'contract_change_not_allowed', path: 'manifest.assets.0.schema' }]);
  });

  it('allow_contract_changes_duplicate at each later index, in any environment', () => {
    for (const strict of [true, false]) {
      const result = validateManifest(
        changedManifest(),
        context({ strict, activeManifest: active(), allowContractChanges: ['orders', 'raw_orders', 'orders', 'orders'] }),
      );
      expect(result.errors).toEqual([
        {
          code: 'allow_contract_changes_duplicate',
          path: 'allow_contract_changes.2',
          message: 'Asset key "orders" is listed more than once in allow_contract_changes.',
        },
        {
          code: 'allow_contract_changes_duplicate',
          path: 'allow_contract_changes.3',
          message: 'Asset key "orders" is listed more than once in allow_contract_changes.',
        },
      ]);
    }
  });

  it('allow_contract_changes_not_changed for listed keys that did not change, once per key', () => {
    const result = validateManifest(
      validManifest(),
      context({ strict: true, activeManifest: active(), allowContractChanges: ['orders', 'nope', 'orders'] }),
    );
    expect(result.errors).toEqual([
      {
        code: 'allow_contract_changes_duplicate',
        path: 'allow_contract_changes.2',
        message: 'Asset key "orders" is listed more than once in allow_contract_changes.',
      },
      {
        code: 'allow_contract_changes_not_changed',
        path: 'allow_contract_changes.0',
        message:
          'Asset key "orders" is listed in allow_contract_changes, but no asset with that key changed its declared columns.',
      },
      {
        code: 'allow_contract_changes_not_changed',
        path: 'allow_contract_changes.1',
        message: 'Asset key "nope" is listed in allow_contract_changes, but no asset with that key changed its declared columns.',
      },
    ]);
  });

  it('allow_contract_changes_not_changed also without an active deployment', () => {
    const result = validateManifest(validManifest(), context({ allowContractChanges: ['orders'] }));
    expect(codesAndPaths(result.errors)).toEqual([{ code: 'allow_contract_changes_not_changed', path: 'allow_contract_changes.0' }]);
  });
});

describe('suggestions in the findings', () => {
  const context = { bindings: new Map([['warehouse', { mode: 'live' as const }]]), bundleEntries: new Set(['assets/cities.js', 'assets/scratch.js']), activeManifest: null, strict: false, allowContractChanges: [], environmentName: 'dev' };

  it('names the close names of assets, deps, jobs, bindings, column types, fields and time zones, and the command that makes a missing binding', () => {
    const manifest = {
      version: 1,
      assets: [
        { key: 'cities', binding: 'warehous', entry: 'assets/citys.js', dependencies: [] },
        { key: 'scratch', binding: 'warehouse', entry: 'assets/scratch.js', deps: ['citys'], schema: { columns: [{ name: 'n', type: 'integr' }] } },
      ],
      jobs: [{ name: 'build', assets: ['scrach'] }],
      schedules: [{ name: 'nightly', job: 'buld', cron: '0 2 * * *', timezone: 'Europe/Berln' }],
    };
    const messages = validateManifest(manifest, context).errors.map((error) => error.message);
    expect(messages).toEqual(expect.arrayContaining([
      'manifest.assets.0.dependencies is not a known field. Did you mean "deps"?',
      expect.stringContaining('not "integr". Did you mean "integer"?'),
    ]));
    // With the shape fixed, the references: each with its suggestion.
    const fixed = { ...manifest, assets: [{ ...manifest.assets[0], dependencies: undefined, deps: [] }, { ...manifest.assets[1], schema: { columns: [{ name: 'n', type: 'integer' }] } }] };
    const references = validateManifest(JSON.parse(JSON.stringify(fixed)), context).errors.map((error) => error.message);
    expect(references).toEqual([
      'Asset "scratch" depends on "citys", which is not an asset of this manifest. Did you mean "cities"?',
      'Asset "cities" is stored on binding "warehous", which this environment does not have. Did you mean "warehouse"? Make it with `envctl bindings set warehous --env dev`.',
      'Asset "cities" has entry "assets/citys.js", which is not a file in the bundle. Did you mean "assets/cities.js"?',
      'Job "build" names asset "scrach", which is not an asset of this manifest. Did you mean "scratch"?',
      'Schedule "nightly" runs job "buld", which is not a job of this manifest. Did you mean "build"?',
      'Schedule "nightly" has time zone "Europe/Berln", which is not a known IANA time zone (did you mean "Europe/Berlin"?).',
    ]);
  });
});
