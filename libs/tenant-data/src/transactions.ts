import type { ClientSession, Connection } from 'mongoose';

/**
 * Runs `work` in a MongoDB transaction, all or nothing. The driver retries the whole
 * function on a transient error (a write conflict with a concurrent transaction) and the
 * commit on an unknown result, so `work` must only touch the database through `session`.
 */
export async function inTransaction<T>(connection: Connection, work: (session: ClientSession) => Promise<T>): Promise<T> {
  const session = await connection.startSession();
  try {
    return await session.withTransaction(() => work(session));
  } finally {
    await session.endSession();
  }
}
