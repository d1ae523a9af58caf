import { Router, type NextFunction, type Request, type Response } from 'express';
import { BUNDLE_REF_PATTERN, PublicApi, type BundleLimits } from '@envengine/contracts';
import { ApiError, drainRefusedBody, mountRawEndpoint, requestContext } from '@envengine/service-kit';
import type { BundleRepository } from '@envengine/deployment-data';

const BUNDLE_CONTENT_TYPES = new Set(['application/gzip', 'application/x-gzip', 'application/octet-stream', 'application/x-tar+gzip']);

/** `POST /bundles` (raw tar.gz, streamed) and `HEAD /bundles/:ref`; bodies are not JSON here. */
export function bundlesRouter(bundles: BundleRepository, limits: BundleLimits): Router {
  const router = Router();

  mountRawEndpoint(router, PublicApi.uploadBundle, async (req: Request, res: Response, next: NextFunction) => {
    try {
      const tenantId = requestContext(res).tenantId!;
      const mediaType = (req.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
      if (mediaType && !BUNDLE_CONTENT_TYPES.has(mediaType)) {
        await drainRefusedBody(req);
        throw new ApiError('invalid_request', 'A bundle is sent as raw tar.gz bytes with Content-Type: application/gzip (or application/octet-stream).', {
          details: [{ path: 'Content-Type', message: 'must be application/gzip or application/octet-stream' }],
          headers: { Connection: 'close' },
        });
      }
      if (Number(req.headers['content-length'] ?? 0) > limits.bytes) {
        await drainRefusedBody(req);
        throw new ApiError('payload_too_large', `The bundle exceeds ${limits.bytes} bytes.`, { headers: { Connection: 'close' } });
      }
      const stored = await bundles.store(tenantId, req, limits);
      res.status(stored.created ? 201 : 200).json({ data: { bundle_ref: stored.bundleRef, size: stored.size } });
    } catch (error) {
      next(error);
    }
  });

  mountRawEndpoint(router, PublicApi.bundleExists, async (req: Request, res: Response, next: NextFunction) => {
    try {
      const ref = String(req.params.ref ?? '');
      const found = BUNDLE_REF_PATTERN.test(ref) && (await bundles.exists(requestContext(res).tenantId!, ref));
      res.status(found ? 200 : 404).end();
    } catch (error) {
      next(error);
    }
  });

  // A worker fetches the code of an attempt by digest (and caches it by digest); the
  // worker API prefix keeps it off the routes an ordinary API token opens.
  mountRawEndpoint(router, PublicApi.downloadBundle, async (req: Request, res: Response, next: NextFunction) => {
    try {
      const ref = String(req.params.ref ?? '');
      const bundle = BUNDLE_REF_PATTERN.test(ref) ? await bundles.open(requestContext(res).tenantId!, ref) : null;
      if (!bundle) throw new ApiError('not_found', `Bundle "${ref}" was not found.`);
      res.status(200).set({ 'content-type': 'application/gzip', 'content-length': String(bundle.size) });
      bundle.stream.on('error', (error) => res.destroy(error));
      bundle.stream.pipe(res);
    } catch (error) {
      next(error);
    }
  });

  return router;
}
