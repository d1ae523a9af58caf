#!/usr/bin/env bash
# Entry point of every README command. Installs what is missing (npm packages, which
# include Node 24 itself), then runs the command on Node 24 from node_modules.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

install_needed() {
  [ ! -x node_modules/.bin/node ] && return 0
  [ ! -f node_modules/.package-lock.json ] && return 0
  [ package-lock.json -nt node_modules/.package-lock.json ] && return 0
  return 1
}
if install_needed; then
  echo "envengine: installing npm packages (Node 24 included)..." >&2
  npm ci --no-audit --no-fund
fi
export PATH="$PWD/node_modules/.bin:$PATH"
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" != "24" ]; then
  echo "envengine: expected Node 24 from node_modules/.bin/node, found $(node --version)" >&2
  exit 1
fi
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false

cmd="${1:-}"
shift || true
case "$cmd" in
  stack)
    nx run-many -t build --outputStyle=static
    exec tsx tools/stack/stack.ts "$@"
    ;;
  test)
    # Unit tests, types and lint per project (cached by Nx), then the integration suite
    # through the gateway against real Temporal, MongoDB-wire and Redis servers.
    nx run-many -t lint typecheck test --outputStyle=static
    nx run-many -t build --outputStyle=static
    exec nx run api-e2e:e2e --outputStyle=static
    ;;
  bench)
    nx run-many -t build --outputStyle=static
    exec tsx tools/bench/bench.ts "$@"
    ;;
  admin)
    exec tsx tools/admin/admin.ts "$@"
    ;;
  *)
    echo "usage: tools/run.sh {stack up|test|bench|admin ...}" >&2
    exit 2
    ;;
esac
