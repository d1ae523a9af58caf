import type { ClientSession, Connection } from 'mongoose';
import { ENGINE_APP_NAME_PREFIX } from '@envengine/service-kit';

/**
 * An engine transaction idle this long is taken for a dead process's. The engine's
 * transactions run their statements back to back, in milliseconds, and do no other I/O.
 */
export const ABANDONED_TRANSACTION_IDLE_MS = 5_000;

/** At most one search for abandoned transactions per connection in this time, however many transactions conflict. */
const ABANDONED_SEARCH_INTERVAL_MS = 1_000;

const lastSearch = new WeakMap<Connection, number>();

/**
 * Runs `work` in a MongoDB transaction, all or nothing. The driver retries the whole
 * function on a transient error (a write conflict with a concurrent transaction) and the
 * commit on an unknown result, so `work` must only touch the database through `session`.
 *
 * A retry follows a conflict, and the other side may be a transaction whose process was
 * killed inside it (SIGKILL, the OOM killer): MongoDB keeps that one open, holding its
 * writes, until `transactionLifetimeLimitSeconds` (60 s by default), and every transaction
 * that writes the same document (an engine fence) conflicts until then. So a retry first
 * aborts the engine's own transactions idle for `ABANDONED_TRANSACTION_IDLE_MS`.
 */
export async function inTransaction<T>(connection: Connection, work: (session: ClientSession) => Promise<T>): Promise<T> {
  const session = await connection.startSession();
  let tries = 0;
  try {
    return await session.withTransaction(async () => {
      tries += 1;
      if (tries > 1) await abortAbandonedTransactions(connection);
      return work(session);
    });
  } finally {
    await session.endSession();
  }
}

/**
 * Kills the sessions of this user's engine transactions that have been idle for
 * `ABANDONED_TRANSACTION_IDLE_MS`. Safe for a live but stalled one too: its next statement
 * or its commit fails as transient, and the driver runs it again from the start. Needs no
 * privilege beyond the scope's own user (`$currentOp` and `killSessions` on one's own
 * sessions); the engine's filter on `appName` leaves other applications' sessions alone
 * where the server has no users. The number of sessions killed.
 */
export async function abortAbandonedTransactions(connection: Connection, now = Date.now()): Promise<number> {
  if (now - (lastSearch.get(connection) ?? 0) < ABANDONED_SEARCH_INTERVAL_MS) return 0;
  lastSearch.set(connection, now);
  const admin = connection.getClient().db('admin');
  try {
    const abandoned = await admin
      .aggregate<{ lsid: { id: unknown } }>([
        { $currentOp: { idleSessions: true, allUsers: false } },
        {
          $match: {
            type: 'idleSession',
            appName: { $regex: `^${ENGINE_APP_NAME_PREFIX}` },
            'transaction.timeInactiveMicros': { $gte: ABANDONED_TRANSACTION_IDLE_MS * 1000 },
          },
        },
        { $project: { lsid: 1 } },
      ])
      .toArray();
    if (abandoned.length === 0) return 0;
    await admin.command({ killSessions: abandoned.map((entry) => ({ id: entry.lsid.id })) });
    return abandoned.length;
  } catch {
    // Only an optimisation over the server's own limit, which still ends the transaction: the caller's retry goes on.
    return 0;
  }
}
