import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { ActivationOutcome, ActivationRequest } from './definitions.ts';

/** To an environment's activation workflow: one more activation to run, after those before it. */
export const activationRequested = defineSignal<[ActivationRequest]>('activationRequested');
/** From it, to the workflow that asked: how the activation went. */
export const activationFinished = defineSignal<[ActivationOutcome]>('activationFinished');
/**
 * Of it: the requests it holds and has not answered (the one being activated first). Asked
 * by an environment's tear-down after it terminated the workflow, so that each requester
 * is told the environment was deleted instead of waiting out its limit.
 */
export const unansweredActivations = defineQuery<ActivationRequest[]>('unansweredActivations');
