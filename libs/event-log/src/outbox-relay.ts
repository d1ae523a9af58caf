import { randomUUID } from 'node:crypto';
import { Schema, type Connection } from 'mongoose';
import type { RecordedEvent } from '@envengine/contracts';
import type { Logger } from '@envengine/process-kit';
import { ENGINE_OWNER, TenantScopedModel } from '@envengine/tenant-data';
import { isDuplicateKeyError } from '@envengine/service-kit';
import { recordedEvent, type EventOutbox } from './event-outbox.ts';

interface RelayLeaseDocument {
  _id: string;
  tenant_id: string;
  holder: string;
  expires_at: Date;
}

const relayLeaseSchema = new Schema<RelayLeaseDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    holder: { type: String, required: true },
    expires_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'event_relay_leases' },
);

export interface OutboxRelayOptions {
  outbox: EventOutbox;
  connection: Connection;
  /** Hands a batch on (the audit log, webhooks); throws when it could not, and the batch is sent again. */
  publish: (events: RecordedEvent[]) => Promise<void>;
  log: Logger;
  /** How often a relay with nothing to do looks again (rows another replica wrote, a lease to take over). */
  pollMs?: number;
  batchSize?: number;
  /** How long a relay's lease holds without renewal: a killed relay's successor waits this long at most. */
  leaseMs?: number;
}

/**
 * Publishes a scope's outbox rows in id order, at least once: a batch is marked published
 * only after `publish` returned, so a relay killed between the two sends it again from the
 * next one. One relay of the scope's replicas publishes at a time (a lease in the scope's
 * database), so that rows leave in order. The replica that wrote a row nudges its relay;
 * the poll finds the rest.
 */
export class OutboxRelay {
  private readonly leases: TenantScopedModel<RelayLeaseDocument>;
  private readonly holder = randomUUID();
  private readonly pollMs: number;
  private readonly batchSize: number;
  private readonly leaseMs: number;
  /** This process's clock when its lease, as it last wrote it, ends; 0 while it holds none. */
  private heldUntil = 0;
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private nudged = false;
  private failures = 0;

  constructor(private readonly options: OutboxRelayOptions) {
    this.leases = TenantScopedModel.of(options.connection, 'EventRelayLease', relayLeaseSchema);
    this.pollMs = options.pollMs ?? 500;
    this.batchSize = options.batchSize ?? 200;
    this.leaseMs = options.leaseMs ?? 10_000;
    options.outbox.onRecorded(() => this.nudge());
  }

  async ensureIndexes(): Promise<void> {
    await this.leases.ensureIndexes();
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops after the batch in hand; the lease is left to expire only if giving it back fails. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    await this.leases.deleteMany(ENGINE_OWNER, { _id: 'relay', holder: this.holder }).catch(() => undefined);
  }

  /** A row was just committed: look now rather than at the next poll. */
  nudge(): void {
    this.nudged = true;
    this.wake?.();
  }

  private async run(): Promise<void> {
    while (this.running) {
      let delay = this.pollMs;
      try {
        delay = (await this.publishOnce()) ? 0 : this.pollMs;
        this.failures = 0;
      } catch (error) {
        this.failures += 1;
        delay = Math.min(30_000, this.pollMs * 2 ** Math.min(this.failures, 6));
        this.options.log.warn({ err: error, failures: this.failures, retry_in_ms: delay }, 'event relay: a batch was not published; it is sent again');
      }
      if (delay > 0) await this.sleep(delay);
    }
  }

  /** Publishes one batch if this relay holds the lease; whether there may be more. */
  private async publishOnce(): Promise<boolean> {
    this.nudged = false;
    if (!(await this.holdLease())) return false;
    const rows = await this.options.outbox.pending(this.batchSize);
    if (rows.length === 0) return false;
    await this.options.publish(rows.map(recordedEvent));
    await this.options.outbox.markPublished(rows);
    return rows.length === this.batchSize;
  }

  /**
   * Takes or renews the lease, renewing it only once half its term has passed: no other
   * relay may take it before it ends, so a write before then would only say so again (it
   * was one write per pass, two per run, and eight a second from an idle engine's four
   * relays). A batch is so always begun with at least half a term left.
   */
  private async holdLease(): Promise<boolean> {
    const now = Date.now();
    if (now < this.heldUntil - this.leaseMs / 2) return true;
    this.heldUntil = 0;
    try {
      const lease = await this.leases.findOneAndUpdate(
        ENGINE_OWNER,
        { _id: 'relay', $or: [{ holder: this.holder }, { expires_at: { $lt: new Date(now) } }] },
        { $set: { holder: this.holder, expires_at: new Date(now + this.leaseMs) } },
        { upsert: true },
      );
      if (lease?.holder !== this.holder) return false;
      this.heldUntil = now + this.leaseMs;
      return true;
    } catch (error) {
      // Another replica holds it: the upsert's insert met its document.
      if (isDuplicateKeyError(error)) return false;
      throw error;
    }
  }

  private sleep(ms: number): Promise<void> {
    if (this.nudged || !this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = () => {
        this.wake = undefined;
        done();
      };
    });
  }
}
