import { escapeControlCharacters } from '@envengine/terminal-text';
import { EventListQuery, PublicApi, type EngineEvent } from '@envengine/contracts';
import { idFloorAt } from '@envengine/resource-ids';
import type { ApiClient } from '../api-client.ts';
import { integerOption, stringOption, type CommandSpec, type OptionValues } from '../command-line.ts';
import type { Output } from '../output.ts';
import { requestBody } from './request-body.ts';

const PAGE = 500;
const POLL_MS = 1000;
/**
 * How far back `tail` looks again at each poll: the scopes' relays hand their events to the
 * audit log a little late (a second or so), so an event may arrive with an id older than the
 * newest one shown. Ids seen in this window are remembered, so none is printed twice.
 */
const LATE_ARRIVAL_MS = 30_000;

const FILTER_OPTIONS = {
  env: { type: 'string', short: 'e', value: 'NAME', description: "only this environment's events (also after it was deleted)" },
  type: { type: 'string', value: 'TYPE', description: 'one type (run.failed) or every type under a prefix (run.*)' },
  subject: { type: 'string', value: 'ID', description: "only events about this resource: a run, attempt, environment or pool credential id, a secret's or binding's name" },
} as const;

function filtersOf(values: OptionValues): Pick<EventListQuery, 'environment' | 'type' | 'subject'> {
  const environment = stringOption(values, 'env');
  const type = stringOption(values, 'type');
  const subject = stringOption(values, 'subject');
  return { ...(environment ? { environment } : {}), ...(type ? { type } : {}), ...(subject ? { subject } : {}) };
}

function eventRow(event: EngineEvent): string[] {
  return [
    event.time,
    event.type,
    escapeControlCharacters(event.environment ?? '-'),
    `${event.subject.kind} ${escapeControlCharacters(event.subject.id)}`,
    event.actor,
    escapeControlCharacters(JSON.stringify(event.data)),
  ];
}

const HEADERS = ['TIME', 'TYPE', 'ENVIRONMENT', 'SUBJECT', 'ACTOR', 'DATA'] as const;

function eventLine(out: Output, event: EngineEvent): string {
  const [time, type, environment, subject, actor, data] = eventRow(event);
  return `${out.paint(time!, 'dim')} ${type} ${environment} ${subject} ${out.paint(`by ${actor}`, 'dim')} ${data}`;
}

/** The events after `after` (oldest first), every page of them. */
async function eventsAfter(api: ApiClient, after: string, filters: Pick<EventListQuery, 'environment' | 'type' | 'subject'>): Promise<EngineEvent[]> {
  const events: EngineEvent[] = [];
  for (let cursor = after; ; ) {
    const { data } = await api.request(PublicApi.listEvents, { query: requestBody(EventListQuery, { ...filters, after: cursor, limit: PAGE }) });
    events.push(...data);
    if (data.length < PAGE) return events;
    cursor = data[data.length - 1]!.id;
  }
}

export const eventCommands: CommandSpec[] = [
  {
    path: ['events', 'list'],
    summary: 'list your events (the audit log), newest first: who changed what, and when',
    options: {
      ...FILTER_OPTIONS,
      since: { type: 'string', value: 'TIME', description: 'only events at or after TIME (ISO 8601, 2026-11-27T10:00:00Z)' },
      until: { type: 'string', value: 'TIME', description: 'only events before TIME' },
      limit: { type: 'string', value: 'N', description: 'at most N (1-500, default 50)' },
    },
    async run(ctx, { values }) {
      const since = stringOption(values, 'since');
      const until = stringOption(values, 'until');
      const query = requestBody(EventListQuery, {
        ...filtersOf(values),
        ...(since ? { since } : {}),
        ...(until ? { until } : {}),
        limit: integerOption(values, 'limit', { min: 1, max: 500 }) ?? 50,
      });
      const { data } = await (await ctx.api()).request(PublicApi.listEvents, { query });
      ctx.out.data(data, () => ctx.out.table(HEADERS, data.map(eventRow)));
    },
  },
  {
    path: ['events', 'tail'],
    summary: 'print the last events, then each new one as it happens (NDJSON in json mode) until interrupted',
    options: {
      ...FILTER_OPTIONS,
      last: { type: 'string', value: 'N', description: 'events shown before following (0-500, default 10)' },
    },
    async run(ctx, { values }) {
      const api = await ctx.api();
      const filters = filtersOf(values);
      const last = integerOption(values, 'last', { min: 0, max: 500 }) ?? 10;
      const shown = new Map<string, number>();
      const show = (event: EngineEvent) => {
        shown.set(event.id, Date.parse(event.time));
        ctx.out.line(event, () => eventLine(ctx.out, event));
      };
      // The newest events (at least one, to learn the server's clock): the last `last` are shown,
      // and every one in the late-arrival window before the newest is marked seen, not shown.
      const head = (await api.request(PublicApi.listEvents, { query: requestBody(EventListQuery, { ...filters, limit: Math.max(last, 1) }) })).data;
      let newest = head[0] ? Date.parse(head[0].time) : undefined;
      if (newest !== undefined) for (const event of await eventsAfter(api, idFloorAt('evt', newest - LATE_ARRIVAL_MS), filters)) shown.set(event.id, Date.parse(event.time));
      for (const event of head.slice(0, last).reverse()) show(event);
      for (;;) {
        await ctx.sleep(POLL_MS);
        const windowStart = newest === undefined ? 0 : newest - LATE_ARRIVAL_MS;
        for (const event of await eventsAfter(api, idFloorAt('evt', windowStart), filters)) {
          if (shown.has(event.id)) continue;
          show(event);
          newest = Math.max(newest ?? 0, Date.parse(event.time));
        }
        for (const [id, at] of shown) if (at < windowStart) shown.delete(id);
      }
    },
  },
];
