import { describe, expect, it } from 'vitest';
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { EngineNetworkGuard, hostAddresses, RefusedAddressError, REFUSED_RANGES } from './engine-network.ts';

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

  describe("the engine host's own subnets", () => {
    const on = (address: string, cidr: string, family: 'IPv4' | 'IPv6'): NetworkInterfaceInfo =>
      ({ address, cidr, family, internal: false, netmask: '', mac: '02:00:00:00:00:01', ...(family === 'IPv6' ? { scopeid: 0 } : {}) }) as NetworkInterfaceInfo;
    const host = new EngineNetworkGuard({
      interfaces: () => ({
        lo: [{ address: '127.0.0.1', cidr: '127.0.0.1/8', family: 'IPv4', internal: true, netmask: '255.0.0.0', mac: '00:00:00:00:00:00' }],
        eth0: [on('198.51.100.7', '198.51.100.7/24', 'IPv4'), on('2001:db8:1::7', '2001:db8:1::7/64', 'IPv6')],
      }),
    });

    it('refuses every address of a subnet the host is on, not only its own address, and nothing beside them', () => {
      for (const address of ['198.51.100.7', '198.51.100.1', '198.51.100.255', '::ffff:198.51.100.9', '2001:db8:1::7', '2001:db8:1::ffff']) expect(host.refusal(address), address).not.toBeNull();
      for (const address of ['198.51.101.1', '198.51.99.255', '2001:db8:2::1']) expect(host.refusal(address), address).toBeNull();
      expect(host.refusal('198.51.100.77')).toMatch(/the engine host's addresses and subnets/);
    });

    it('refuses them at connect time: the lookup an HTTP agent calls fails for a name on them', async () => {
      const looked = await new Promise<Error | null>((resolve) => host.lookup('198.51.100.77', {}, (error) => resolve(error)));
      expect(looked).toBeInstanceOf(RefusedAddressError);
      expect(looked!.message).toMatch(/^198\.51\.100\.77: 198\.51\.100\.77 is on the engine's own network/);
      expect(await host.refusalOfHost('198.51.100.77')).not.toBeNull();
    });

    it("by default, the subnets of this host's own interfaces", () => {
      const guard = new EngineNetworkGuard();
      for (const address of Object.values(networkInterfaces()).flat()) {
        if (!address || address.internal || address.family !== 'IPv4') continue;
        const [a, b, c, d] = address.address.split('.').map(Number) as [number, number, number, number];
        const bits = Number(address.cidr!.split('/')[1]);
        if (bits > 30) continue;
        // Another address of the same subnet: the last octet's other low bit.
        const neighbour = `${a}.${b}.${c}.${d ^ 1}`;
        expect(guard.refusal(neighbour), `${neighbour} beside ${address.cidr}`).not.toBeNull();
      }
    });
  });
});
