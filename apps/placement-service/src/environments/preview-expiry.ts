const HOUR_MS = 3_600_000;

/** What a preview's expiry is computed from (docs/design.md#environment-lifecycle). */
export interface PreviewLifetimes {
  /** Its lifetime after its creation, its last deploy or the PATCH that set it. */
  ttlHours: number | null;
  /** When that lifetime started. */
  ttlFrom: Date;
  /** Its idle lifetime: with no deploy and no run for this long it expires. */
  idleTtlHours: number | null;
  /** Its last creation, deploy or run. */
  lastActiveAt: Date;
}

/** The earlier of its two lapses, or null when it has neither TTL. */
export function previewExpiry({ ttlHours, ttlFrom, idleTtlHours, lastActiveAt }: PreviewLifetimes): Date | null {
  const lapses = [
    ...(ttlHours ? [ttlFrom.getTime() + ttlHours * HOUR_MS] : []),
    ...(idleTtlHours ? [lastActiveAt.getTime() + idleTtlHours * HOUR_MS] : []),
  ];
  return lapses.length === 0 ? null : new Date(Math.min(...lapses));
}
