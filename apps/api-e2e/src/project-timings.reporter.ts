import type { Reporter, TestModule } from 'vitest/node';

/** Each vitest project's wall time, first file's start to last file's end, for docs/development.md#how-long-npm-test-takes. */
export class ProjectTimingsReporter implements Reporter {
  private readonly spans = new Map<string, { start: number; end: number; files: number }>();

  onTestModuleStart(module: TestModule): void {
    if (!this.spans.has(module.project.name)) this.spans.set(module.project.name, { start: Date.now(), end: Date.now(), files: 0 });
  }

  onTestModuleEnd(module: TestModule): void {
    const span = this.spans.get(module.project.name);
    if (!span) return;
    span.end = Date.now();
    span.files += 1;
  }

  onTestRunEnd(): void {
    for (const [name, span] of this.spans) console.log(`e2e project ${name}: ${span.files} files in ${((span.end - span.start) / 1000).toFixed(0)} s`);
  }
}
