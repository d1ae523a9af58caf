import { closestName } from '@envengine/name-suggestions';
// Time zones are checked with the runtime's own IANA data (Intl), which is pure and
// deterministic for a given Node build, so this is safe in workflow code.

/**
 * Why `name` is not usable as a schedule's IANA time zone, as a clause that completes
 * "… which <reason>", or null when it is.
 */
export function timeZoneProblem(name: string): string | null {
  if (name === 'UTC') return null;
  // Intl also accepts UTC offsets such as "+01:00"; a schedule needs a zone name.
  if (!/^[A-Za-z]/.test(name)) return 'is not an IANA time zone name such as "Europe/Paris"';
  let canonical: string;
  try {
    canonical = new Intl.DateTimeFormat(undefined, { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    const closest = closestName(name, Intl.supportedValuesOf('timeZone'));
    return closest === undefined ? 'is not a known IANA time zone' : `is not a known IANA time zone (did you mean ${JSON.stringify(closest)}?)`;
  }
  // Intl matches names case-insensitively, but schedulers that read the zone database
  // from disk do not.
  if (canonical !== name && canonical.toLowerCase() === name.toLowerCase()) {
    return `is not spelled as the IANA time zone ${JSON.stringify(canonical)}`;
  }
  return null;
}
