import { expect } from 'vitest';
import { EngineEvent } from '@envengine/contracts';
import type { ApiClient } from '@envengine/test-harness';

/** Below every event id: `after` it, the log reads oldest first from its start. */
const BEFORE_ALL_EVENTS = `evt_${'0'.repeat(26)}`;
const PAGE = 500;

/** A tenant's events as `GET /events` answered them. */
export interface EventPages {
  events: EngineEvent[];
  /** Each event as the API sent it (not as parsed, which would drop a field off the contract). */
  rawEvents: string[];
  /** Each page's body as sent. */
  pageTexts: string[];
}

/** Every event of the tenant, oldest first, read page by page; `query` adds filters (`&type=run.*`). */
export async function readEventPages(api: ApiClient, query = ''): Promise<EventPages> {
  const pages: EventPages = { events: [], rawEvents: [], pageTexts: [] };
  for (;;) {
    const after = pages.events.at(-1)?.id ?? BEFORE_ALL_EVENTS;
    const response = await api.get(`/events?limit=${PAGE}&after=${after}${query}`);
    expect(response.status, response.text).toBe(200);
    const page = response.body.data as unknown[];
    pages.events.push(...page.map((event) => EngineEvent.parse(event)));
    pages.rawEvents.push(...page.map((event) => JSON.stringify(event)));
    pages.pageTexts.push(response.text);
    if (page.length < PAGE) return pages;
  }
}

/**
 * The pages' events but for the tenant's API tokens' (`token.created` of the token the
 * harness issued it): what a test did, not its setup. The pages' texts keep them, for scans.
 */
export function withoutTokenEvents(pages: EventPages): EventPages {
  const kept = pages.events.map((event) => !event.type.startsWith('token.'));
  return { events: pages.events.filter((_, index) => kept[index]), rawEvents: pages.rawEvents.filter((_, index) => kept[index]), pageTexts: pages.pageTexts };
}

/** The tenant's events matching `query`, oldest first, but for its API tokens'. */
export async function allEvents(api: ApiClient, query = ''): Promise<EngineEvent[]> {
  return withoutTokenEvents(await readEventPages(api, query)).events;
}
