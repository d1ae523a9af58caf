import { escapeControlCharacters } from '@envengine/terminal-text';
import type { Connection } from 'mongoose';
import type { AppendLogsRequest, AttemptLogLine, RunLogLine } from '@envengine/contracts';
import { TenantScopedModel } from '@envengine/tenant-data';
import { logLineSchema, type AttemptDocument, type LogLineDocument } from './run.schema.ts';

/** A line's id is `<attempt id>:<seq, zero-padded>`: unique per line, and sorted as the attempt wrote them. */
const LOG_SEQ_DIGITS = 10;

/** The log lines of attempts, kept with the run they belong to and read back by cursor. */
export class AttemptLogRepository {
  private readonly logs: TenantScopedModel<LogLineDocument>;

  constructor(connection: Connection) {
    this.logs = TenantScopedModel.of(connection, 'AttemptLogLine', logLineSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.logs.ensureIndexes();
  }

  /** Stores a batch of log lines once each (a re-sent batch is ignored line by line). */
  async append(attempt: AttemptDocument, request: AppendLogsRequest): Promise<void> {
    const docs = request.lines.map((line: AttemptLogLine) => ({
      tenantId: attempt.tenant_id,
      doc: {
        _id: `${attempt._id}:${String(line.seq).padStart(LOG_SEQ_DIGITS, '0')}`,
        run_id: attempt.run_id,
        attempt_id: attempt._id,
        attempt: attempt.number,
        asset: line.asset,
        at: new Date(line.at),
        // Stored as it will be shown: no line can drive a terminal or hide another (tab kept).
        message: escapeControlCharacters(line.message),
      },
    }));
    try {
      await this.logs.insertManyOwned(docs);
    } catch (error) {
      // Duplicates of lines already stored are expected on a retry; anything else is not.
      const writeErrors = (error as { writeErrors?: Array<{ code?: number; err?: { code?: number } }> }).writeErrors;
      if (!writeErrors || !writeErrors.every((entry) => (entry.code ?? entry.err?.code) === 11000)) throw error;
    }
  }

  async lines(tenantId: string, runId: string, after: string | undefined, limit: number): Promise<RunLogLine[]> {
    const docs = await this.logs.find(tenantId, { run_id: runId, ...(after ? { _id: { $gt: after } } : {}) }, { sort: { _id: 1 }, limit });
    return docs.map((doc) => ({
      cursor: doc._id,
      attempt_id: doc.attempt_id,
      attempt: doc.attempt,
      asset: doc.asset,
      at: doc.at.toISOString(),
      message: doc.message,
    }));
  }

  /** Removes the log lines of these runs (an environment's tear-down); how many. */
  deleteOfRuns(tenantId: string, runIds: string[]): Promise<number> {
    return this.logs.deleteMany(tenantId, { run_id: { $in: runIds } });
  }
}
