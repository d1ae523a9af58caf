// The soak's load: a few actors per tenant doing what platform teams do, all of it through
// the gateway, picked by a seeded source. Every answer is counted by kind and status, and
// every 2xx write is kept (the ledger) so that the invariants look for it in the stores.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { AcknowledgedWrite } from '@envengine/test-harness';
import { makeBundle, manifestOf, type ApiClient, type ApiResponse } from '@envengine/test-harness';
import type { SeededRandom } from './seeded-random.ts';
import type { TimedOperation } from './work-resumed.ts';

export const OPERATIONS = {
  create_environment: 3,
  delete_environment: 1,
  deploy: 4,
  rollback: 1,
  run: 8,
  idempotent_run: 2,
  secret: 3,
  binding: 2,
  placement: 1,
} as const;
export type Operation = keyof typeof OPERATIONS;

const MAX_ENVIRONMENTS = 4;

interface LiveEnvironment {
  name: string;
  id: string;
  deployments: string[];
}

/** What the load saw and what it was told was written. */
export class SoakLedger {
  readonly writes: AcknowledgedWrite[] = [];
  /** Environments whose DELETE answered 200, by id. */
  readonly deleted = new Set<string>();
  /** Environments a DELETE was sent for, by id (answered 200 or not). */
  readonly deleteRequested = new Map<string, { tenantId: string; name: string }>();
  /** Environments a DELETE with `purge_data=true` was sent for: id → the directory of their storage prefix. */
  readonly purgeRequested = new Map<string, string>();
  /** `<operation> <status or error>` → count. */
  readonly outcomes = new Map<string, number>();
  /** Replays of an Idempotency-Key whose answer was not the first one's. */
  readonly replayMismatches: string[] = [];
  replays = 0;
  /** Answers 500: a fault must end in a clear error (503), never an internal one. */
  readonly internalErrors: string[] = [];
  /** Every request with its times (epoch ms), for when work resumed after each fault. */
  readonly timeline: TimedOperation[] = [];

  count(operation: Operation, outcome: string): void {
    const key = `${operation} ${outcome}`;
    this.outcomes.set(key, (this.outcomes.get(key) ?? 0) + 1);
  }
}

/** One tenant's share of the load. */
export class TenantLoad {
  private readonly environments: LiveEnvironment[] = [];
  private bundleRef: string | null = null;
  private serial = 0;

  constructor(
    private readonly tenantId: string,
    private readonly api: ApiClient,
    private readonly random: SeededRandom,
    private readonly ledger: SoakLedger,
    private readonly lakeDir: string,
  ) {}

  /** Runs `actors` loops until `stop` aborts; each loop does one operation after another. */
  async run(actors: number, stop: AbortSignal): Promise<void> {
    await Promise.all(
      Array.from({ length: actors }, async () => {
        while (!stop.aborted) await this.step(this.random.weighted(OPERATIONS));
      }),
    );
  }

  private async step(operation: Operation): Promise<void> {
    const startedAt = Date.now();
    try {
      const answer = await this.perform(operation);
      if (answer === null) return;
      this.ledger.count(operation, String(answer.status));
      const outcome = answer.status < 300 ? 'ok' : answer.status >= 500 ? 'failed' : 'refused';
      this.ledger.timeline.push({ operation, startedAt, endedAt: Date.now(), outcome });
      if (answer.status === 500) this.ledger.internalErrors.push(`${operation}: ${answer.text.slice(0, 300)}`);
    } catch (error) {
      const code = (error as Error & { cause?: { code?: string } }).cause?.code;
      // A connection refused or reset while the gateway itself is down or paused; anything
      // else (an answer off the OpenAPI document) is a defect.
      this.ledger.count(operation, `error ${code ?? (error as Error).name}`);
      this.ledger.timeline.push({ operation, startedAt, endedAt: Date.now(), outcome: 'failed' });
      if (code === undefined) this.ledger.internalErrors.push(`${operation}: ${(error as Error).message.slice(0, 300)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** One operation; null when it did not apply (no environment to act on). */
  private async perform(operation: Operation): Promise<ApiResponse | null> {
    if (operation === 'create_environment') return this.environments.length >= MAX_ENVIRONMENTS ? null : this.createEnvironment();
    if (this.environments.length === 0) return null;
    const environment = this.random.pick(this.environments);
    const path = `/environments/${environment.name}`;
    switch (operation) {
      case 'delete_environment': {
        if (this.environments.length <= 1) return null;
        // Out of the live set first: no other actor starts on it meanwhile.
        this.environments.splice(this.environments.indexOf(environment), 1);
        // Asked: the tear-down may go on after a 503 or a lost answer; the stores say later whether it happened.
        this.ledger.deleteRequested.set(environment.id, { tenantId: this.tenantId, name: environment.name });
        // Half of them with their data: the prefix's files must go too.
        const purge = this.random.next() < 0.5;
        if (purge) this.ledger.purgeRequested.set(environment.id, this.lakeOf(environment.name));
        const target = `${path}?force=true${purge ? '&purge_data=true' : ''}`;
        let answer = await this.api.delete(target);
        // A tear-down that outlives the request goes on; a repeat waits for it.
        for (let tries = 0; answer.status === 503 && tries < 20; tries++) answer = await this.api.delete(target);
        if (answer.status === 200) this.ledger.deleted.add(environment.id);
        return answer;
      }
      case 'deploy': {
        const answer = await this.api.post(`${path}/deployments`, { manifest: this.manifest(), bundle_ref: await this.bundle() });
        if (answer.status === 201) {
          const id = (answer.body as { data: { id: string } }).data.id;
          environment.deployments.push(id);
          this.ledger.writes.push({ kind: 'deployment', tenantId: this.tenantId, environmentId: environment.id, id });
        }
        return answer;
      }
      case 'rollback': {
        if (environment.deployments.length < 2) return null;
        return this.api.post(`/deployments/${this.random.pick(environment.deployments)}/activate`, {});
      }
      case 'run':
      case 'idempotent_run': {
        const key = operation === 'idempotent_run' ? `soak-${randomBytes(6).toString('hex')}` : null;
        const headers = key ? { 'idempotency-key': key } : undefined;
        const answer = await this.api.post(`${path}/runs`, { job: 'all' }, { headers });
        if (answer.status === 201) {
          const id = (answer.body as { data: { id: string } }).data.id;
          this.ledger.writes.push({ kind: 'run', tenantId: this.tenantId, environmentId: environment.id, id });
          if (key) {
            const replay = await this.api.post(`${path}/runs`, { job: 'all' }, { headers });
            this.ledger.replays += 1;
            const replayed = replay.status === 201 ? (replay.body as { data: { id: string } }).data.id : `status ${replay.status}`;
            // A replay may meet a fault (503); it must never be a second run.
            if (replay.status !== 503 && replayed !== id) this.ledger.replayMismatches.push(`${key}: first run ${id}, replay ${replayed}`);
          }
        }
        return answer;
      }
      case 'secret': {
        const name = `s${this.random.between(1, 3)}`;
        const answer = await this.api.put(`${path}/secrets/${name}`, { value: randomBytes(12).toString('hex') });
        if (answer.status === 200 || answer.status === 201) {
          const version = (answer.body as { data: { version: number } }).data.version;
          this.ledger.writes.push({ kind: 'secret_version', tenantId: this.tenantId, environmentId: environment.id, name, version });
        }
        return answer;
      }
      case 'binding': {
        const name = this.random.pick(['warehouse', 'audit']);
        const answer = await this.api.put(`${path}/bindings/${name}`, { config: { revision: this.random.between(1, 1000) } });
        if (answer.status === 200 || answer.status === 201) this.ledger.writes.push({ kind: 'binding', tenantId: this.tenantId, environmentId: environment.id, name });
        return answer;
      }
      case 'placement':
        return this.api.post(`${path}/placement`, { executor: this.random.pick(['local', 'remote']) });
    }
  }

  private async createEnvironment(): Promise<ApiResponse> {
    const name = `soak-${++this.serial}`;
    const answer = await this.api.post('/environments', { name, storage_prefix: `file://${this.lakeOf(name)}`, executor: this.random.pick(['local', 'remote']) });
    if (answer.status !== 201) return answer;
    const id = (answer.body as { data: { id: string } }).data.id;
    this.ledger.writes.push({ kind: 'environment', tenantId: this.tenantId, id, name });
    const binding = await this.api.put(`/environments/${name}/bindings/warehouse`, {});
    if (binding.status === 201 || binding.status === 200) this.ledger.writes.push({ kind: 'binding', tenantId: this.tenantId, environmentId: id, name: 'warehouse' });
    this.environments.push({ name, id, deployments: [] });
    return answer;
  }

  /** The directory of an environment's storage prefix. */
  private lakeOf(name: string): string {
    return join(this.lakeDir, name);
  }

  /** Two assets; the columns change now and then (a contract change), and half the manifests tick every minute. */
  private manifest(): Record<string, unknown> {
    const wide = this.random.next() < 0.3;
    const manifest = manifestOf([
      { key: 'orders', columns: [{ name: 'id', type: 'integer' }, ...(wide ? [{ name: 'note', type: 'string', nullable: true }] : [])] },
      { key: 'totals', deps: ['orders'], columns: [{ name: 'total', type: 'integer' }] },
    ]);
    return { ...manifest, schedules: this.random.next() < 0.5 ? [{ name: 'minutely', job: 'all', cron: '* * * * *', timezone: 'UTC' }] : [] };
  }

  private async bundle(): Promise<string> {
    if (this.bundleRef) return this.bundleRef;
    const bundle = await makeBundle({
      'assets/orders.js': 'export default async (ctx) => { await new Promise((resolve) => setTimeout(resolve, 300)); await ctx.emit([{ id: 1 }, { id: 2 }]); };',
      'assets/totals.js': 'export default async (ctx) => { const rows = await ctx.read(\'orders\'); await ctx.emit([{ total: rows.length }]); };',
    });
    const uploaded = await this.api.request('POST', '/bundles', { raw: bundle, headers: { 'content-type': 'application/gzip' } });
    if (uploaded.status !== 200 && uploaded.status !== 201) throw new Error(`uploading the bundle answered ${uploaded.status}`);
    this.bundleRef = (uploaded.body as { data: { bundle_ref: string } }).data.bundle_ref;
    return this.bundleRef;
  }
}
