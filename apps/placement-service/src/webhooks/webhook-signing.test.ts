import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { MasterKeyring, generateMasterKeyText } from '@envengine/sealed-values';
import { WebhookSecret } from '@envengine/contracts';
import { newSigningSecret, openSigningSecret, sealSigningSecret, signatureHeader } from './webhook-signing.ts';

describe('webhook signing', () => {
  it('signs as the Standard Webhooks library verifies, with each secret of a rotation', () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    expect(WebhookSecret.safeParse(current).success).toBe(true);
    const body = JSON.stringify({ type: 'run.failed', data: { id: 'evt_1' } });
    const now = new Date();
    const seconds = Math.floor(now.getTime() / 1000);
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(seconds), 'webhook-signature': signatureHeader([current, previous], 'evt_1', seconds, body) };
    expect(new Webhook(current).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(previous).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newSigningSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(current).verify(`${body} `, headers)).toThrow();
    expect(new Webhook(current).sign('evt_1', now, body)).toBe(signatureHeader([current], 'evt_1', seconds, body));
  });

  it('seals a secret for its webhook only, and opens it with the keyring', () => {
    const keyring = MasterKeyring.fromText(generateMasterKeyText());
    const secret = newSigningSecret();
    const createdAt = new Date();
    const stored = sealSigningSecret(secret, 'whk_a', createdAt, keyring);
    expect(stored).not.toContain(secret.slice(6));
    expect(openSigningSecret(stored, 'whk_a', createdAt, keyring)).toBe(secret);
    expect(() => openSigningSecret(stored, 'whk_b', createdAt, keyring)).toThrow(/failed authentication/);
    expect(() => openSigningSecret(stored, 'whk_a', createdAt, MasterKeyring.fromText(generateMasterKeyText()))).toThrow();
  });
});
