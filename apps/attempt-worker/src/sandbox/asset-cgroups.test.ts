import { describe, expect, it } from 'vitest';
import { chooseCgroupLayout, parseCgroupMounts, parseProcCgroup } from './asset-cgroups.ts';

// What /proc says on three kinds of host: this project's (v1 controllers beside an empty
// v2 hierarchy), a current systemd host (v2 only), and a container with its own cgroup
// namespace (v2, mounted at its subtree).
const V1_MOUNTINFO = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`;
const V1_PROC_CGROUP = `8:pids:/
4:memory:/process_api/f190
2:cpuacct:/
1:cpu:/
0::/`;
const V2_MOUNTINFO = `25 1 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot`;
const V2_PROC_CGROUP = `0::/system.slice/envengine-runner.service`;

describe('cgroup layout', () => {
  it('reads the mounts and the process paths', () => {
    expect(parseCgroupMounts(V1_MOUNTINFO).map((mount) => [mount.mountPoint, mount.fsType])).toEqual([
      ['/sys/fs/cgroup/cpu', 'cgroup'],
      ['/sys/fs/cgroup/cpuacct', 'cgroup'],
      ['/sys/fs/cgroup/memory', 'cgroup'],
      ['/sys/fs/cgroup/pids', 'cgroup'],
      ['/sys/fs/cgroup/unified', 'cgroup2'],
    ]);
    const paths = parseProcCgroup(V1_PROC_CGROUP);
    expect([paths.get('memory'), paths.get('pids'), paths.get('')]).toEqual(['/process_api/f190', '/', '/']);
  });

  it('takes v1 where the v2 hierarchy has no controllers (this project\'s machines)', () => {
    const layout = chooseCgroupLayout(V1_MOUNTINFO, V1_PROC_CGROUP, (dir) => (dir === '/sys/fs/cgroup/unified' ? [''] : null));
    expect(layout).toEqual({ version: 1, memory: '/sys/fs/cgroup/memory/process_api/f190', pids: '/sys/fs/cgroup/pids', cpu: '/sys/fs/cgroup/cpu' });
  });

  it('takes v2 where its hierarchy gives the worker memory, pids and cpu', () => {
    const layout = chooseCgroupLayout(V2_MOUNTINFO, V2_PROC_CGROUP, (dir) =>
      dir === '/sys/fs/cgroup/system.slice/envengine-runner.service' ? ['cpuset', 'cpu', 'io', 'memory', 'pids'] : null,
    );
    expect(layout).toEqual({ version: 2, base: '/sys/fs/cgroup/system.slice/envengine-runner.service' });
  });

  it('reads a container\'s v2 mount of its own subtree', () => {
    const mountinfo = `600 500 0:30 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw`;
    const layout = chooseCgroupLayout(mountinfo, '0::/docker/abc', () => ['memory', 'pids', 'cpu']);
    expect(layout).toEqual({ version: 2, base: '/sys/fs/cgroup' });
  });

  it('says in one line what a host lacks', () => {
    expect(chooseCgroupLayout(V2_MOUNTINFO, V2_PROC_CGROUP, () => ['cpu'])).toEqual({
      problem: "the cgroup v2 hierarchy gives this process's cgroup (/system.slice/envengine-runner.service) no memory/pids/cpu controllers, and no cgroup v1 hierarchy mounts memory, pids, cpu",
    });
    expect(chooseCgroupLayout('', '', () => null)).toEqual({ problem: 'no cgroup v2 hierarchy is mounted, and no cgroup v1 hierarchy mounts memory, pids, cpu' });
  });
});
