import { defineSignal } from '@temporalio/workflow';
import type { ActivationOutcome, ActivationRequest } from './definitions.ts';

/** To an environment's activation workflow: one more activation to run, after those before it. */
export const activationRequested = defineSignal<[ActivationRequest]>('activationRequested');
/** From it, to the workflow that asked: how the activation went. */
export const activationFinished = defineSignal<[ActivationOutcome]>('activationFinished');
