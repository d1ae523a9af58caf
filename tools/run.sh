#!/usr/bin/env bash
# Entry point of every README command. Installs what is missing (npm packages, which
# include Node 26 itself), then runs the command on that Node from node_modules.
set -euo pipefail
# envctl works on the caller's folder (`envctl deploy` packs it); npm runs scripts from the
# package root and says where it was called from in INIT_CWD.
if [ "${npm_lifecycle_event:-}" = envctl ] && [ -n "${INIT_CWD:-}" ]; then caller_dir=$INIT_CWD; else caller_dir=$PWD; fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo_dir=$PWD

# Reinstall when package.json or the lockfile changed since the last install.
stamp_file=node_modules/.envengine-install-stamp
stamp=$(cat package.json package-lock.json apps/*/package.json libs/*/package.json | sha256sum | cut -d' ' -f1)
if [ ! -x node_modules/.bin/node ] || [ "$(cat "$stamp_file" 2>/dev/null)" != "$stamp" ]; then
  echo "envengine: installing npm packages (Node 26 included)..." >&2
  # `npm install` rather than `npm ci`: it installs the lockfile's pinned versions too, but
  # tolerates optional platform builds (other OSes' @swc/core, msgpackr-extract) that a
  # registry mirror lacks and that npm therefore leaves out of the lockfile, which
  # `npm ci` rejects as out of sync.
  npm install --no-audit --no-fund >&2
  stamp=$(cat package.json package-lock.json apps/*/package.json libs/*/package.json | sha256sum | cut -d' ' -f1)
  echo "$stamp" > "$stamp_file"
fi
export PATH="$PWD/node_modules/.bin:$PATH"
# The release package.json pins (devDependencies "node"), read from there, not written twice.
pinned=$(node -p 'require("./package.json").devDependencies.node')
if [ "$(node -p 'process.versions.node')" != "$pinned" ]; then
  echo "envengine: expected Node $pinned from node_modules/.bin/node, found $(node --version)" >&2
  exit 1
fi
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false

# `npm test` says how long each phase took (docs/development.md#how-long-npm-test-takes).
phase_started=$SECONDS
phase() {
  echo "npm test: $1 in $((SECONDS - phase_started)) s"
  phase_started=$SECONDS
}
cmd="${1:-}"
shift || true
case "$cmd" in
  stack)
    nx run-many -t build --outputStyle=static
    exec node --import tsx tools/stack/stack.ts "$@"
    ;;
  soak)
    # A stack of its own under load and faults, then the stores' invariants (tools/soak/soak.ts).
    nx run-many -t build --outputStyle=static
    exec node --import tsx tools/soak/soak.ts "$@"
    ;;
  test)
    # `--profile cluster`: every test stack that names no profile runs the cluster profile
    # (docs/development.md#profiles); the default is the embedded one.
    while [ $# -gt 0 ]; do
      case "$1" in
        --profile) export ENVENGINE_TEST_PROFILE="${2:-}"; shift 2 || shift ;;
        --profile=*) export ENVENGINE_TEST_PROFILE="${1#--profile=}"; shift ;;
        *) echo "usage: npm test [-- --profile embedded|cluster]" >&2; exit 2 ;;
      esac
    done
    case "${ENVENGINE_TEST_PROFILE:-embedded}" in
      embedded|cluster) ;;
      *) echo "--profile must be embedded or cluster (got \"${ENVENGINE_TEST_PROFILE}\")" >&2; exit 2 ;;
    esac
    # The servers' binaries first (some libs' own tests start a Redis), then lint, types,
    # unit tests and the apps' builds in one pass (cached by Nx), then the integration suite
    # through the gateway against real Temporal, MongoDB (a replica set), Redis and SeaweedFS
    # servers, its files side by side by the stack they need (apps/api-e2e/vitest.config.ts).
    echo "npm test: the npm packages in $phase_started s"
    node --import tsx tools/servers/install.ts
    phase "the servers' binaries"
    nx run-many -t lint typecheck test build --outputStyle=static
    phase "lint, types, unit tests and builds"
    nx run api-e2e:e2e --outputStyle=static --excludeTaskDependencies
    phase "the integration suite"
    # Then 2 minutes of steady load under faults at random (docs/design.md#quality-bars) on a
    # stack of its own, the embedded profile, with a fixed seed: a broken invariant fails the
    # test, and `npm run soak -- --minutes 2 --seed 7` runs the same faults again. Beside the
    # suite it bought no time: both are bound by the two cores.
    echo "soak: 2 minutes, seed 7 (again: npm run soak -- --minutes 2 --seed 7)"
    soak_status=0
    node --import tsx tools/soak/soak.ts --minutes 2 --seed 7 --profile embedded --report "${TMPDIR:-/tmp}/envengine-soak-report.md" || soak_status=$?
    phase "the soak"
    echo "npm test: $( [ "$soak_status" = 0 ] && echo passed || echo FAILED ) in $SECONDS s"
    exit "$soak_status"
    ;;
  bench)
    nx run-many -t build --outputStyle=static
    exec node --import tsx tools/bench/bench.ts "$@"
    ;;
  admin)
    exec node --import tsx tools/admin/admin.ts "$@"
    ;;
  envctl)
    # The command-line client (docs/cli.md), built first when a source changed since the
    # last build. Asking Nx costs about 0.8 s even when its cache answers, so it is asked
    # only when some file under apps/, libs/ or tools/build, or the lockfile, is newer than
    # the older of the two built files. The build's output is shown (on stderr) only when it
    # fails, so that stdout carries only envctl's data.
    built=dist/apps/cli/main.js
    worker_built=dist/worker-package/envengine-worker/envengine-worker.mjs
    oldest=$built
    [ -f "$worker_built" ] && [ "$worker_built" -ot "$built" ] && oldest=$worker_built
    if [ -f "$built" ] && [ -f "$worker_built" ] &&
      [ -z "$(find apps libs tools/build package-lock.json -name node_modules -prune -o -type f -newer "$oldest" -print -quit)" ]; then
      build_log=
    elif ! build_log=$(nx run-many -t build -p cli attempt-worker --outputStyle=static 2>&1); then
      echo "$build_log" >&2
      echo "envctl: the build failed (above)" >&2
      exit 1
    else
      # Checked now: a change Nx found no reason to rebuild for (a test file) is not asked about again.
      touch "$built" "$worker_built"
    fi
    cd "$caller_dir"
    exec node "$repo_dir/dist/apps/cli/main.js" "$@"
    ;;
  *)
    echo "usage: tools/run.sh {stack up|test|bench|admin ...|envctl ...}" >&2
    exit 2
    ;;
esac
