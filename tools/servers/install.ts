// `tools/run.sh test` calls this first: the backing servers' binaries are
// obtained once per machine, into the per-user cache, before any test needs one.
import { installServerBinaries } from '@envengine/backing-servers';

const report = (line: string) => console.error(`envengine: ${line}`);
const installed = await installServerBinaries(report);
for (const [name, path] of Object.entries(installed)) {
  report(`${name}: ${path ?? 'from its URL, or obtained when the server starts'}`);
}
