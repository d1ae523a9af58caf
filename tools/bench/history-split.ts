// Where a workflow's time goes, read from its Temporal history: the gap before each event,
// named by the event before and the event after it. What the deployments suite prints for
// its slowest ingests and activations, beside the HTTP latency the client saw.
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';

interface HistoryEvent {
  type: string;
  atMs: number;
  /** An activity task's attempt (ActivityTaskStarted, or a local activity's marker), and the failure of the one before (a local activity's: its name). */
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
  const events = (history.events ?? []).map((event) => ({
    type: (EventType[event.eventType ?? 0] ?? String(event.eventType)).replace(/^EVENT_TYPE_/, ''),
    atMs: millisOf(event.eventTime),
    attempt: event.activityTaskStartedEventAttributes?.attempt ?? undefined,
    lastFailure: event.activityTaskStartedEventAttributes?.lastFailure?.message ?? undefined,
  }));
  // A local activity runs inside a workflow task: its marker, recorded when the task
  // completes, says when it finished and at which attempt, which splits that task's time.
  const finished = (history.events ?? []).flatMap((event) => {
    const marker = localActivityMarkerOf(event.markerRecordedEventAttributes?.details?.['data']?.payloads?.[0]?.data);
    return marker ? [{ type: `${marker.activityType} done${marker.attempt > 1 ? ` (attempt ${marker.attempt})` : ''}`, atMs: marker.atMs, attempt: marker.attempt, lastFailure: `local activity ${marker.activityType}` }] : [];
  });
  return [...events, ...finished].sort((a, b) => a.atMs - b.atMs);
}

/** The Core SDK's `LocalActivityMarkerData`, as JSON in the marker's `data` payload (complete_time in serde's form: seconds and nanos, or an RFC 3339 string). */
function localActivityMarkerOf(data: Uint8Array | null | undefined): { activityType: string; attempt: number; atMs: number } | null {
  if (!data) return null;
  try {
    const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as { attempt?: number; activity_type?: string; complete_time?: string | { seconds?: number; nanos?: number } };
    const time = parsed.complete_time;
    if (typeof parsed.activity_type !== 'string' || !time) return null;
    return { activityType: parsed.activity_type, attempt: parsed.attempt ?? 1, atMs: typeof time === 'string' ? Date.parse(time) : millisOf(time) };
  } catch {
    return null;
  }
}

/** Each gap between consecutive events, as `BEFORE → AFTER` and its milliseconds. */
export function gapsOf(events: readonly HistoryEvent[]): Array<{ step: string; ms: number }> {
  return events.slice(1).map((event, index) => ({ step: `${events[index]!.type} → ${event.type}`, ms: event.atMs - events[index]!.atMs }));
}

/** The workflow's own span: its first event to its last. */
export function spanOf(events: readonly HistoryEvent[]): number {
  return events.length === 0 ? 0 : events.at(-1)!.atMs - events[0]!.atMs;
}

/** Activities (remote or local) that took more than one attempt, with the failure that made the retry where the history keeps it. */
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
