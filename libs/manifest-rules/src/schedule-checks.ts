import { suggestionFor } from './suggestions.ts';
import { cronExpressionProblem } from '@envengine/schedule-timing';
import type { ManifestV1 } from '@envengine/contracts';
import { quoted } from '@envengine/contracts';
import { timeZoneProblem } from './time-zone.ts';
import { manifestPath, type ValidationError } from './validation-issue.ts';

// Checks of a parsed manifest's jobs and schedules.

export function jobErrors(manifest: ManifestV1, assetIndex: ReadonlyMap<string, number>): ValidationError[] {
  const errors: ValidationError[] = [];
  manifest.jobs?.forEach((job, jobIndex) => {
    job.assets.forEach((key, keyIndex) => {
      if (assetIndex.has(key)) return;
      errors.push({
        code: 'unknown_job_asset',
        path: manifestPath('jobs', jobIndex, 'assets', keyIndex),
        message: `Job ${quoted(job.name)} names asset ${quoted(key)}, which is not an asset of this manifest.${suggestionFor(key, assetIndex.keys())}`,
      });
    });
  });
  return errors;
}

export function scheduleErrors(manifest: ManifestV1): ValidationError[] {
  const jobNames = new Set(manifest.jobs?.map((job) => job.name));
  const errors: ValidationError[] = [];
  manifest.schedules?.forEach((schedule, index) => {
    if (!jobNames.has(schedule.job)) {
      errors.push({
        code: 'unknown_schedule_job',
        path: manifestPath('schedules', index, 'job'),
        message: `Schedule ${quoted(schedule.name)} runs job ${quoted(schedule.job)}, which is not a job of this manifest.${suggestionFor(schedule.job, jobNames)}`,
      });
    }
    const cronProblem = cronExpressionProblem(schedule.cron);
    if (cronProblem !== null) {
      errors.push({
        code: 'invalid_cron',
        path: manifestPath('schedules', index, 'cron'),
        message: `Schedule ${quoted(schedule.name)} has cron ${quoted(schedule.cron)}, which is not valid: ${cronProblem}.`,
      });
    }
    const zoneProblem = timeZoneProblem(schedule.timezone);
    if (zoneProblem !== null) {
      errors.push({
        code: 'invalid_cron',
        path: manifestPath('schedules', index, 'timezone'),
        message: `Schedule ${quoted(schedule.name)} has time zone ${quoted(schedule.timezone)}, which ${zoneProblem}.`,
      });
    }
  });
  return errors;
}
