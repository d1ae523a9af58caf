import mongoose from 'mongoose';
import { ApiTokenRepository, OPERATOR_CAUSE, type IssuedToken, type Tenant } from '@envengine/api-tokens';
import { EventOutbox, type EventCause } from '@envengine/event-log';

/**
 * Opens the gateway's token store, runs `work`, and closes it again. What `work` changes
 * is recorded in the gateway's outbox; the running gateway's relay publishes it.
 */
export async function withTokenStore<T>(
  mongoUrl: string,
  dbName: string,
  work: (tokens: ApiTokenRepository) => Promise<T>,
): Promise<T> {
  const connection = mongoose.createConnection(mongoUrl, { dbName, serverSelectionTimeoutMS: 5000 });
  try {
    await connection.asPromise();
    const tokens = new ApiTokenRepository(connection, new EventOutbox(connection));
    await tokens.ensureIndexes();
    return await work(tokens);
  } finally {
    await connection.close();
  }
}

/** A new token for the named tenant (created if missing); its event's actor is `operator` unless `cause` says otherwise. */
export async function issueToken(
  tokens: ApiTokenRepository,
  tenantName: string,
  label: string,
  cause: EventCause = OPERATOR_CAUSE,
): Promise<{ tenant: Tenant; token: IssuedToken }> {
  const tenant = await tokens.ensureTenant(tenantName);
  return { tenant, token: await tokens.issueToken(tenant.id, label, cause) };
}
