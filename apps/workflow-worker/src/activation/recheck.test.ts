import { describe, expect, it } from 'vitest';
import type { Materialization } from '@envengine/contracts';
import type { MaterializationRepository } from '@envengine/deployment-data';
import { ENGINE_CAUSE } from '@envengine/event-log';
import { eventCauseOf } from '../activities/deployment-activities.ts';
import { recheckStoredColumns } from './recheck.ts';

const manifest = {
  version: 1,
  assets: [
    { key: 'orders', binding: 'warehouse', entry: 'assets/orders.js', deps: [], schema: { columns: [{ name: 'id', type: 'string' }] } },
    { key: 'customers', binding: 'warehouse', entry: 'assets/customers.js', deps: [], schema: { columns: [{ name: 'id', type: 'integer' }] } },
  ],
  jobs: [{ name: 'all', assets: ['orders', 'customers'] }],
  schedules: [],
};

function stored(id: string, key: string, status: 'latest' | 'quarantined'): Materialization {
  return {
    id,
    asset_key: key,
    columns: [{ name: 'id', type: 'integer', nullable: false }],
    row_count: 1,
    location: null,
    bytes: null,
    run_id: null,
    attempt_id: null,
    status,
    quarantine: null,
    inserted_at: new Date(0).toISOString(),
  };
}

describe('the activation re-check', () => {
  const environment = { id: 'env_1', name: 'prod' };
  const cause = { actor: 'tok_1', requestId: 'req_1' };

  it('quarantines a mismatching latest with its environment and cause, and leaves a quarantined one as it is', async () => {
    for (const status of ['latest', 'quarantined'] as const) {
      const quarantined: unknown[][] = [];
      const materializations = {
        latest: async () => new Map([['orders', stored('mat_1', 'orders', status)], ['customers', stored('mat_2', 'customers', 'latest')]]),
        quarantine: async (...args: unknown[]) => {
          quarantined.push(args);
          return true;
        },
      } as unknown as MaterializationRepository;
      const recheck = await recheckStoredColumns(materializations, { tenantId: 'ten_1', environment, deploymentId: 'dep_1', manifest, cause });
      expect(recheck).toEqual({ checked: 2, quarantined: ['orders'] });
      expect(quarantined).toEqual(status === 'latest' ? [['ten_1', 'mat_1', expect.stringContaining('id'), 'dep_1', { environment, cause }]] : []);
    }
  });
});

describe('the cause a workflow carries to its events', () => {
  it('names the request that started it, or the engine', () => {
    expect(eventCauseOf({ actor: 'tok_1', request_id: 'req_1' })).toEqual({ actor: 'tok_1', requestId: 'req_1' });
    expect(eventCauseOf(undefined)).toEqual(ENGINE_CAUSE);
  });
});
