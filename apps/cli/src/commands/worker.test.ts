import { describe, expect, it } from 'vitest';
import { REPEAT_MS, signalForwarder } from './worker.ts';

describe('signalForwarder', () => {
  it("forwards one Ctrl-C once though it arrives twice (the terminal's and npm's), and a later one again", () => {
    let clock = 1000;
    const sent: string[] = [];
    const forward = signalForwarder((signal) => sent.push(signal), () => clock);
    forward('SIGINT');
    clock += 5;
    forward('SIGINT');
    expect(sent).toEqual(['SIGINT']);
    clock += REPEAT_MS;
    forward('SIGINT');
    forward('SIGTERM');
    expect(sent).toEqual(['SIGINT', 'SIGINT', 'SIGTERM']);
  });
});
