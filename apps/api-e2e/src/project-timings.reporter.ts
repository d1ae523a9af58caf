import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Each vitest project's wall time, first file's start to last file's end, and each file's
 * start and length since the run's first file, for docs/development.md#how-long-npm-test-takes:
 * the files on the run's critical path are the ones to shorten.
 */
export class ProjectTimingsReporter implements Reporter {
  private readonly spans = new Map<string, { start: number; end: number; files: number }>();
  private readonly files = new Map<string, { project: string; start: number; end: number }>();

  onTestModuleStart(module: TestModule): void {
    if (!this.spans.has(module.project.name)) this.spans.set(module.project.name, { start: Date.now(), end: Date.now(), files: 0 });
    this.files.set(module.moduleId, { project: module.project.name, start: Date.now(), end: Date.now() });
  }

  onTestModuleEnd(module: TestModule): void {
    const file = this.files.get(module.moduleId);
    if (file) file.end = Date.now();
    const span = this.spans.get(module.project.name);
    if (!span) return;
    span.end = Date.now();
    span.files += 1;
  }

  onTestRunEnd(): void {
    for (const [name, span] of this.spans) console.log(`e2e project ${name}: ${span.files} files in ${((span.end - span.start) / 1000).toFixed(0)} s`);
    const first = Math.min(...[...this.files.values()].map((file) => file.start));
    const seconds = (ms: number) => String(Math.round(ms / 1000)).padStart(4);
    console.log('e2e files (start s, length s, project, file), by start:');
    for (const [id, file] of [...this.files].sort(([, a], [, b]) => a.start - b.start)) {
      console.log(`${seconds(file.start - first)} ${seconds(file.end - file.start)}  ${file.project.padEnd(9)} ${relative(process.cwd(), id)}`);
    }
  }
}
