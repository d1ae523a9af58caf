import type { ClientSession, Connection } from 'mongoose';
import { engineAppNamePrefix } from '@envengine/service-kit';

/**
 * An engine transaction that has run no statement for this long is taken for a dead
 * process's. The engine's transactions run their statements back to back and do no
 * other I/O, so a live one is never still for seconds.
 */
const ABANDONED_AFTER_MS = 5_000;

/** At most one search for abandoned transactions per connection in this time, however many transactions conflict. */
const SEARCH_INTERVAL_MS = 1_000;

/** How long a search and a kill may take: they are made between a transaction's tries. */
const SEARCH_TIME_LIMIT_MS = 1_000;

/** An open transaction as a search saw it: when it was first seen at that much active time. */
interface SeenTransaction {
  activeMicros: number;
  stillSince: number;
}

interface AbandonedSearch {
  lastAt: number;
  /** By session id and transaction number, the transactions of the last search. */
  seen: Map<string, SeenTransaction>;
  refusalReported: boolean;
}

const searches = new WeakMap<Connection, AbandonedSearch>();

/**
 * Runs `work` in a MongoDB transaction, all or nothing. The driver retries the whole
 * function on a transient error (a write conflict with a concurrent transaction) and the
 * commit on an unknown result, so `work` must only touch the database through `session`.
 *
 * A retry follows a conflict, and the other side may be a transaction whose process was
 * killed inside it (SIGKILL, the OOM killer): MongoDB keeps that one open, holding its
 * writes, until `transactionLifetimeLimitSeconds` (60 s by default), and every transaction
 * that writes the same document (an engine fence) conflicts until then. So each retry
 * first ends the engine's abandoned transactions (`abortAbandonedTransactions`).
 */
export async function inTransaction<T>(connection: Connection, work: (session: ClientSession) => Promise<T>): Promise<T> {
  const session = await connection.startSession();
  let attempt = 0;
  try {
    return await session.withTransaction(async () => {
      attempt += 1;
      if (attempt > 1) await abortAbandonedTransactions(connection);
      return work(session);
    });
  } finally {
    await session.endSession();
  }
}

/**
 * Kills the sessions of this deployment's engine transactions (this MongoDB user's, with
 * the `appName` of a service on this database) that ran no statement between two searches
 * at least `ABANDONED_AFTER_MS` apart: their active time did not move. MongoDB's own
 * counters cannot say so alone (`timeInactiveMicros` adds up every gap of a long live
 * transaction). A killed transaction is aborted whole; were its process alive after all,
 * its next statement fails, and the driver runs it again only if the error is transient.
 * Needs no privilege beyond the scope's own user (`$currentOp` and `killSessions` on
 * one's own sessions). The number of sessions killed.
 */
async function abortAbandonedTransactions(connection: Connection): Promise<number> {
  const now = Date.now();
  let search = searches.get(connection);
  if (!search) searches.set(connection, (search = { lastAt: 0, seen: new Map(), refusalReported: false }));
  if (now - search.lastAt < SEARCH_INTERVAL_MS) return 0;
  search.lastAt = now;
  const admin = connection.getClient().db('admin');
  try {
    const open = await admin
      .aggregate<{ appName?: string; lsid: { id: { toString(encoding: 'hex'): string } }; transaction: { parameters: { txnNumber: number }; timeActiveMicros: number } }>(
        [
          { $currentOp: { idleSessions: true, allUsers: false } },
          { $match: { type: 'idleSession', transaction: { $exists: true } } },
          { $project: { appName: 1, lsid: 1, 'transaction.parameters.txnNumber': 1, 'transaction.timeActiveMicros': 1 } },
        ],
        { maxTimeMS: SEARCH_TIME_LIMIT_MS },
      )
      .toArray();
    const ours = engineAppNamePrefix(connection.name);
    const seen = new Map<string, SeenTransaction>();
    const abandoned: Array<{ id: unknown }> = [];
    for (const entry of open) {
      if (!entry.appName?.startsWith(ours)) continue;
      const key = `${entry.lsid.id.toString('hex')}:${entry.transaction.parameters.txnNumber}`;
      const before = search.seen.get(key);
      const still = before !== undefined && before.activeMicros === entry.transaction.timeActiveMicros;
      const stillSince = still ? before.stillSince : now;
      if (now - stillSince >= ABANDONED_AFTER_MS) abandoned.push({ id: entry.lsid.id });
      else seen.set(key, { activeMicros: entry.transaction.timeActiveMicros, stillSince });
    }
    search.seen = seen;
    if (abandoned.length > 0) await admin.command({ killSessions: abandoned });
    return abandoned.length;
  } catch (error) {
    // Only a shortcut past the server's own limit, which still ends the transaction: the caller's retry goes on.
    if (!search.refusalReported) {
      search.refusalReported = true;
      process.emitWarning(`abandoned MongoDB transactions cannot be searched for or ended; conflicts with one wait for MongoDB's transaction lifetime (${(error as Error).message})`);
    }
    return 0;
  }
}
