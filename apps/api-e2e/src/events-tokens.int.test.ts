import { BSON, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { hashToken, OPERATOR_CAUSE } from '@envengine/api-tokens';
import { Scope } from '@envengine/contracts';
import { issueToken, withTokenStore } from '@envengine/dev-stack';
import { anotherTokenOf, createTenant, revokeToken, until, type TestTenant } from '@envengine/test-harness';

import { readEventPages as allEvents } from './events-fixtures.ts';

const stack = inject('stack');


const occurrences = (texts: readonly string[], needle: string) => texts.reduce((sum, text) => sum + text.split(needle).length - 1, 0);

/**
 * API tokens have no API: the admin command (here the harness, which does as it does)
 * writes a token and its event in one transaction to the gateway's outbox, and the
 * gateway's relay hands the event to the audit log. No event carries a token or its hash.
 */
describe('events of API tokens', () => {
  let tenant: TestTenant;
  let other: TestTenant;
  let mongo: MongoClient;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'events-tokens');
    other = await createTenant(stack, 'events-tokens-other');
    mongo = await MongoClient.connect(stack.mongoUrl);
  });

  afterAll(async () => {
    await mongo?.close();
  });

  /** The id the gateway's store keeps for a token (found by its hash, as the gateway finds it). */
  async function tokenIdOf(token: string): Promise<string> {
    const row = await mongo.db(stack.databases.gateway).collection<{ _id: string }>('api_tokens').findOne({ token_hash: hashToken(token) });
    expect(row, 'the token is in the store').not.toBeNull();
    return row!._id;
  }

  it('records token.created and token.revoked once each, actor operator, without the token or its hash; a second revoke records nothing', async () => {
    const issued = await anotherTokenOf(stack, tenant);
    const doomed = await anotherTokenOf(stack, tenant);
    const [issuedId, doomedId] = [await tokenIdOf(issued.token!), await tokenIdOf(doomed.token!)];
    await revokeToken(stack, doomedId);
    const tokens = mongo.db(stack.databases.gateway).collection<{ _id: string; revoked_at: Date | null }>('api_tokens');
    const revokedAt = (await tokens.findOne({ _id: doomedId }))?.revoked_at;
    expect(revokedAt).toBeInstanceOf(Date);
    // Revoked again: nothing changes (its revocation time is kept) and nothing is recorded.
    await revokeToken(stack, doomedId);
    expect((await tokens.findOne({ _id: doomedId }))?.revoked_at).toEqual(revokedAt);

    // The positive control, issued last: its label is the revoked token's value, on purpose,
    // so the scans below must find that value once. Once its event is in, every earlier one
    // is (the relay publishes the gateway's outbox in id order).
    const { token: control } = await withTokenStore(stack.mongoUrl, stack.databases.gateway, (store) => issueToken(store, tenant.tenantName, doomed.token!, OPERATOR_CAUSE));
    const everything = await until(
      () => allEvents(tenant.api, '&type=token.*'),
      (pages) => pages.events.some((event) => event.subject.id === control.id),
      20_000,
      50,
    );

    // The admin command's tokens have every scope, for every environment, with no expiry.
    const admin = { role: 'admin', scopes: [...Scope.options], environments: null, expires_at: null };
    expect(everything.events.map((event) => [event.type, event.subject, event.data])).toEqual([
      ['token.created', { kind: 'token', id: tenant.tokenId }, { label: 'test', ...admin }],
      ['token.created', { kind: 'token', id: issuedId }, { label: 'test', ...admin }],
      ['token.created', { kind: 'token', id: doomedId }, { label: 'test', ...admin }],
      ['token.revoked', { kind: 'token', id: doomedId }, { label: 'test' }],
      ['token.created', { kind: 'token', id: control.id }, { label: doomed.token, ...admin }],
    ]);
    for (const event of everything.events) {
      expect([event.type, event.actor, event.environment, event.request_id]).toEqual([event.type, 'operator', null, null]);
    }
    // Each token's events, as `?subject=` answers them.
    expect((await allEvents(tenant.api, `&subject=${issuedId}`)).events.map((event) => event.type)).toEqual(['token.created']);
    expect((await allEvents(tenant.api, `&subject=${doomedId}`)).events.map((event) => event.type)).toEqual(['token.created', 'token.revoked']);
    expect((await allEvents(tenant.api, '&type=token.revoked')).events.map((event) => event.subject.id)).toEqual([doomedId]);

    // No token and no hash anywhere: not in what GET /events sent, nor in the gateway's
    // outbox, nor in the audit log's rows. Each scan finds the control (the revoked token's
    // value, as a label) once, and nothing else.
    const outboxRows = await mongo.db(stack.databases.gateway).collection('event_outbox').find({ tenant_id: tenant.tenantId }).toArray();
    const auditRows = await mongo.db(stack.databases['placement-service']).collection('events').find({ tenant_id: tenant.tenantId, type: /^token\./ }).toArray();
    expect(outboxRows.length).toBe(5);
    expect(auditRows.length).toBe(5);
    const scans: Record<string, string[]> = {
      'GET /events pages': everything.pageTexts,
      'gateway event_outbox': outboxRows.map((row) => BSON.EJSON.stringify(row)),
      'placement-service events': auditRows.map((row) => BSON.EJSON.stringify(row)),
    };
    const secrets = [tenant.token, issued.token!, control.token].flatMap((token) => [token, hashToken(token)]);
    for (const [where, texts] of Object.entries(scans)) {
      expect([where, occurrences(texts, doomed.token!)]).toEqual([where, 1]);
      expect([where, occurrences(texts, hashToken(doomed.token!))]).toEqual([where, 0]);
      for (const secret of secrets) expect([where, occurrences(texts, secret)]).toEqual([where, 0]);
    }

    // Another tenant sees its own token's creation only.
    const seen = await until(() => allEvents(other.api, '&type=token.*'), (pages) => pages.events.length >= 1, 20_000, 50);
    expect(seen.events.map((event) => [event.type, event.subject.id, event.actor])).toEqual([['token.created', other.tokenId, 'operator']]);
    for (const id of [tenant.tokenId, issuedId, doomedId, control.id]) expect((await allEvents(other.api, `&subject=${id}`)).events).toEqual([]);
    expect(seen.pageTexts.join('\n')).not.toContain(doomed.token!);
  });
});
