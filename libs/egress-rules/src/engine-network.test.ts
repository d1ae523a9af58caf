import { describe, expect, it } from 'vitest';
import { EngineNetworkGuard, hostAddresses, REFUSED_RANGES } from './engine-network.ts';

describe('EngineNetworkGuard', () => {
  const guard = new EngineNetworkGuard();

  it('refuses loopback, private, link-local and IPv6 local addresses, and IPv4-mapped forms of them', () => {
    for (const address of ['127.0.0.1', '127.8.9.10', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:10.0.0.1', '::ffff:127.0.0.1']) {
      expect(guard.refusal(address), address).not.toBeNull();
    }
    for (const range of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16']) expect(REFUSED_RANGES).toContain(range);
  });

  it('lets public addresses through, and every address of the engine host is refused', () => {
    for (const address of ['1.1.1.1', '203.0.113.5', '2606:4700::1111', '::ffff:8.8.8.8']) expect(guard.refusal(address), address).toBeNull();
    for (const address of hostAddresses()) expect(guard.refusal(address), address).not.toBeNull();
  });

  it("an operator's exception allows an address or a range, and nothing beside it", () => {
    const allowing = new EngineNetworkGuard({ allowed: ['127.0.0.1', '10.9.0.0/16'] });
    expect(allowing.refusal('127.0.0.1')).toBeNull();
    expect(allowing.refusal('10.9.200.1')).toBeNull();
    expect(allowing.refusal('127.0.0.2')).not.toBeNull();
    expect(allowing.refusal('10.8.0.1')).not.toBeNull();
    expect(() => new EngineNetworkGuard({ allowed: ['not-an-ip'] })).toThrow(/not an IP address/);
    expect(() => new EngineNetworkGuard({ allowed: ['10.0.0.0/99'] })).toThrow(/prefix length/);
  });

  it('judges a host by every address it resolves to; an IP literal is its own address', async () => {
    expect(await guard.refusalOfHost('10.0.0.1')).not.toBeNull();
    expect(await guard.refusalOfHost('[::1]')).not.toBeNull();
    expect(await guard.refusalOfHost('localhost')).not.toBeNull();
    expect(await guard.refusalOfHost('203.0.113.9')).toBeNull();
  });
});
