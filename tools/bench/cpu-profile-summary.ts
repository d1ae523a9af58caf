import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
}

/** Where a group of code spends its time: our code, a package, or Node itself. */
function ownerOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (packageMatch) return packageMatch[1]!;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  if (url.includes('/dist/apps/')) return 'envengine (bundled app code)';
  return url;
}

/** Self time by owner for each `.cpuprofile` in `dir`, largest first. */
export function summarizeCpuProfiles(dir: string, top = 8): string {
  const lines: string[] = [];
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const totalHits = profile.nodes.reduce((sum, node) => sum + (node.hitCount ?? 0), 0);
    const byOwner = new Map<string, number>();
    for (const node of profile.nodes) {
      const owner = ownerOf(node.callFrame.url, node.callFrame.functionName);
      byOwner.set(owner, (byOwner.get(owner) ?? 0) + (node.hitCount ?? 0));
    }
    const seconds = (profile.endTime - profile.startTime) / 1e6;
    lines.push(`${file} (${seconds.toFixed(0)} s sampled)`);
    for (const [owner, hits] of [...byOwner].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      lines.push(`  ${((hits / totalHits) * 100).toFixed(1).padStart(5)}%  ${owner}`);
    }
  }
  return lines.join('\n');
}
