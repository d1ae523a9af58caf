// Where a workflow's time goes, read from its Temporal history: the gap before each event,
// named by the event before and the event after it. What the deployments suite prints for
// its slowest ingests and activations, beside the HTTP latency the client saw.
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

interface HistoryEvent {
  type: string;
  atMs: number;
  /** An activity task's attempt (ActivityTaskStarted), and the failure of the one before. */
  attempt?: number;
  lastFailure?: string;
}

const { EventType } = proto.temporal.api.enums.v1;

function millisOf(time: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  return Number(time?.seconds ?? 0) * 1000 + (time?.nanos ?? 0) / 1e6;
}

/** A workflow's events (its latest run), oldest first. */
export async function historyOf(client: Client, workflowId: string): Promise<HistoryEvent[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).map((event) => ({
    type: (EventType[event.eventType ?? 0] ?? String(event.eventType)).replace(/^EVENT_TYPE_/, ''),
    atMs: millisOf(event.eventTime),
    attempt: event.activityTaskStartedEventAttributes?.attempt ?? undefined,
    lastFailure: event.activityTaskStartedEventAttributes?.lastFailure?.message ?? undefined,
  }));
}

/** Each gap between consecutive events, as `BEFORE → AFTER` and its milliseconds. */
export function gapsOf(events: readonly HistoryEvent[]): Array<{ step: string; ms: number }> {
  return events.slice(1).map((event, index) => ({ step: `${events[index]!.type} → ${event.type}`, ms: event.atMs - events[index]!.atMs }));
}

/** The workflow's own span: its first event to its last. */
export function spanOf(events: readonly HistoryEvent[]): number {
  return events.length === 0 ? 0 : events.at(-1)!.atMs - events[0]!.atMs;
}

/** Activity tasks started more than once, with the failure that made the retry. */
export function retriesOf(events: readonly HistoryEvent[]): string[] {
  return events.filter((event) => (event.attempt ?? 1) > 1).map((event) => `attempt ${event.attempt}: ${event.lastFailure ?? '?'}`);
}

/**
 * A line per call: its HTTP latency, the workflow's span and what lies outside it, and its
 * largest gaps. `calls`: the slowest first.
 */
export async function describeCalls(client: Client, calls: ReadonlyArray<{ workflowId: string; latencyMs: number }>, gaps = 3): Promise<string[]> {
  const lines: string[] = [];
  for (const call of calls) {
    const events = await historyOf(client, call.workflowId);
    const span = spanOf(events);
    const largest = gapsOf(events)
      .sort((a, b) => b.ms - a.ms)
      .slice(0, gaps)
      .map((gap) => `${gap.step} ${gap.ms.toFixed(0)} ms`)
      .join('; ');
    const retries = retriesOf(events);
    lines.push(
      `| ${call.workflowId} | ${call.latencyMs.toFixed(0)} | ${span.toFixed(0)} | ${(call.latencyMs - span).toFixed(0)} | ${largest}${retries.length > 0 ? `; retries: ${retries.join(', ')}` : ''} |`,
    );
  }
  return lines;
}
