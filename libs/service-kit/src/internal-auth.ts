import { timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { EnvironmentAccess, INTERNAL_HEADERS } from '@envengine/contracts';
import { unauthorized } from './api-error.ts';
import { requestContext } from './request-context.ts';

const TENANT_ID_PATTERN = /^ten_[0-9a-z]{26}$/;
const ACTOR_PATTERN = /^(tok_[0-9a-z]{1,64}|worker:pcr_[0-9a-z]{1,64})$/;

/**
 * Internal services answer only the gateway: the request must carry the shared internal
 * credential, and the caller's tenant is taken from the gateway's header alone.
 */
export function requireInternalCaller(credential: string) {
  const expected = Buffer.from(credential);
  return (req: Request, res: Response, next: NextFunction): void => {
    const presented = req.headers[INTERNAL_HEADERS.credential];
    const given = Buffer.from(typeof presented === 'string' ? presented : '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      next(unauthorized('This service only answers requests that come through the gateway.'));
      return;
    }
    const tenantId = req.headers[INTERNAL_HEADERS.tenantId];
    if (typeof tenantId !== 'string' || !TENANT_ID_PATTERN.test(tenantId)) {
      next(unauthorized('The gateway did not name the caller.'));
      return;
    }
    const context = requestContext(res);
    context.tenantId = tenantId;
    // Set by the gateway only; a service calling another is the engine.
    const actor = req.headers[INTERNAL_HEADERS.actor];
    if (typeof actor === 'string' && ACTOR_PATTERN.test(actor)) context.actor = actor;
    const environments = req.headers[INTERNAL_HEADERS.environments];
    if (environments !== undefined) context.environments = EnvironmentAccess.fromHeader(Array.isArray(environments) ? environments.join(',') : environments);
    next();
  };
}
