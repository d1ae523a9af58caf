import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The `measured` project's files time a victim's work and compare it with the same work
 * measured quiet, so nothing else may run beside them. Vitest runs the project after the
 * others (vitest.config.ts); `npm test` also runs the soak
 * beside the suite (tools/run.sh), and names their folder in ENVENGINE_BESIDE_E2E_DIR:
 * each writes NAME.status when it ends. A measured file starts once every one has.
 */
const besideDir = process.env.ENVENGINE_BESIDE_E2E_DIR;
if (besideDir && existsSync(besideDir)) {
  const running = () => readdirSync(besideDir).filter((file) => file.endsWith('.log') && !existsSync(join(besideDir, file.replace(/\.log$/, '.status'))));
  const deadline = Date.now() + 30 * 60_000;
  while (running().length > 0) {
    if (Date.now() > deadline) throw new Error(`still running beside the measured files after 30 min: ${running().join(', ')} (logs in ${besideDir})`);
    await sleep(500);
  }
}
