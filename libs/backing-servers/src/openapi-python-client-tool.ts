import { fileURLToPath } from 'node:url';
import type { Reporter } from './binaries.ts';
import { ensurePinnedPythonTool, type PinnedPythonTool } from './pinned-python-tool.ts';

/** The Python client generator the suite checks the OpenAPI document with (issue 61), pinned with its every dependency. */
export const OPENAPI_PYTHON_CLIENT_VERSION = '0.29.1';

/**
 * How to run the installed generator: `python -m openapi_python_client` with its packages on PYTHONPATH
 * (where the client it generates finds httpx, attrs and python-dateutil too).
 */
export type OpenApiPythonClientTool = PinnedPythonTool;

/** openapi-python-client from the per-user cache, installed there the first time, as Schemathesis is (pinned-python-tool.ts). */
export function ensureOpenApiPythonClient(report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<OpenApiPythonClientTool | undefined> {
  const requirements = fileURLToPath(new URL('./openapi-python-client-requirements.txt', import.meta.url));
  return ensurePinnedPythonTool(
    { name: 'openapi-python-client', slug: 'openapi-python-client', version: OPENAPI_PYTHON_CLIENT_VERSION, module: 'openapi_python_client', requirements },
    report,
    env,
  );
}
