import { Client, Connection } from '@temporalio/client';

/** When one deployment's activation worked: from its first critical step scheduled to its last completed. */
export interface ActivationWindow {
  deploymentId: string;
  start: number;
  end: number;
}

/**
 * The activation windows found in the given workflows' histories: every activity whose
 * type is named in `activityTypes`, grouped by the `deploymentId` of its input. Two
 * windows that overlap are two activations working on an environment at once.
 */
export async function activationWindows(
  temporalAddress: string,
  workflowIds: readonly string[],
  activityTypes: readonly string[],
): Promise<ActivationWindow[]> {
  const connection = await Connection.connect({ address: temporalAddress });
  const windows = new Map<string, ActivationWindow>();
  try {
    const client = new Client({ connection });
    for (const workflowId of workflowIds) {
      const history = await client.workflow.getHandle(workflowId).fetchHistory();
      const deploymentOfActivity = new Map<string, string>();
      for (const event of history.events ?? []) {
        const at = Number(event.eventTime?.seconds ?? 0) * 1000 + Math.floor((event.eventTime?.nanos ?? 0) / 1e6);
        const scheduled = event.activityTaskScheduledEventAttributes;
        if (scheduled && activityTypes.includes(scheduled.activityType?.name ?? '')) {
          const input = JSON.parse(Buffer.from(scheduled.input!.payloads![0]!.data!).toString('utf8')) as { deploymentId: string };
          deploymentOfActivity.set(String(event.eventId), input.deploymentId);
          const window = windows.get(input.deploymentId) ?? { deploymentId: input.deploymentId, start: at, end: at };
          window.start = Math.min(window.start, at);
          windows.set(input.deploymentId, window);
        }
        const completed = event.activityTaskCompletedEventAttributes ?? event.activityTaskFailedEventAttributes;
        const deploymentId = completed && deploymentOfActivity.get(String(completed.scheduledEventId));
        if (deploymentId) windows.get(deploymentId)!.end = Math.max(windows.get(deploymentId)!.end, at);
      }
    }
  } finally {
    await connection.close();
  }
  return [...windows.values()];
}

/** Pairs of windows that overlap in time. */
export function overlappingWindows(windows: readonly ActivationWindow[]): Array<[string, string]> {
  const sorted = [...windows].sort((a, b) => a.start - b.start);
  const overlaps: Array<[string, string]> = [];
  for (let i = 0; i < sorted.length; i += 1) {
    for (let j = i + 1; j < sorted.length && sorted[j]!.start < sorted[i]!.end; j += 1) {
      overlaps.push([sorted[i]!.deploymentId, sorted[j]!.deploymentId]);
    }
  }
  return overlaps;
}

/** Ids of the workflows a visibility query lists. */
export async function workflowsOf(temporalAddress: string, query: string): Promise<string[]> {
  const connection = await Connection.connect({ address: temporalAddress });
  try {
    const ids: string[] = [];
    for await (const execution of new Client({ connection }).workflow.list({ query })) ids.push(execution.workflowId);
    return ids;
  } finally {
    await connection.close();
  }
}

/**
 * One line on where a workflow stands (its status and its history's event types, in
 * order), for a test's failure message: what it waited for and why it did not come.
 */
export async function workflowProgress(temporalAddress: string, workflowId: string): Promise<string> {
  const connection = await Connection.connect({ address: temporalAddress });
  try {
    const handle = new Client({ connection }).workflow.getHandle(workflowId);
    const [description, history] = await Promise.all([handle.describe(), handle.fetchHistory()]);
    // Each event carries one `<type>EventAttributes` field: its name says what happened.
    const events = (history.events ?? []).map(
      (event) => Object.keys(event).find((key) => key.endsWith('EventAttributes') && (event as Record<string, unknown>)[key] != null)?.replace(/EventAttributes$/, '') ?? '?',
    );
    return `${workflowId} ${description.status.name}: ${events.join(' ')}`;
  } catch (error) {
    return `${workflowId}: ${(error as Error).message}`;
  } finally {
    await connection.close();
  }
}
