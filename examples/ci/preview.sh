#!/usr/bin/env bash
# A preview environment per pull request, with envctl only (and jq to read its JSON):
#
#   preview.sh open NUMBER [PROJECT_DIR]   make pr-NUMBER (parent $PREVIEW_PARENT), deploy the
#                                          project, print the diff against the parent's active
#                                          deployment, and run the assets that changed
#   preview.sh close NUMBER                tear pr-NUMBER down
#
# ENVCTL_URL and ENVCTL_TOKEN name the engine and a token that sees the parent and pr-*
# (environments:read and :write, deployments:write, runs:read and :write, tokens:admin).
# The preview is deployed and run with a token minted here, limited to pr-* and a day:
# the pull request's code never runs with the token that sees the parent.
# docs/api.md, "Previews with a parent"; the e2e suite runs this file (ci-recipe.int.test.ts).
set -euo pipefail

command -v envctl >/dev/null || { echo "preview.sh: envctl is not on PATH" >&2; exit 2; }
command -v jq >/dev/null || { echo "preview.sh: jq is not on PATH" >&2; exit 2; }

PARENT="${PREVIEW_PARENT:-staging}"
IDLE_TTL_HOURS="${PREVIEW_IDLE_TTL_HOURS:-48}"
EXECUTOR="${PREVIEW_EXECUTOR:-local}"
action="${1:?usage: preview.sh open NUMBER [PROJECT_DIR] | close NUMBER}"
number="${2:?usage: preview.sh open NUMBER [PROJECT_DIR] | close NUMBER}"
name="pr-${number}"

case "$action" in
  open)
    dir="${3:-.}"
    if ! envctl env get "$name" -o json >/dev/null 2>&1; then
      envctl env create "$name" --parent "$PARENT" --executor "$EXECUTOR" --idle-ttl-hours "$IDLE_TTL_HOURS" -o json >/dev/null
      echo "Made $name, a preview of $PARENT."
    fi
    limited="$(envctl tokens create "ci $name" --scope environments:read --scope deployments:write --scope runs:read --scope runs:write \
      --environment 'pr-*' --expires-in-days 1 -o json | jq -r '.token')"

    deployed="$(ENVCTL_TOKEN="$limited" envctl deploy "$dir" --env "$name" -o json)"
    head="$(jq -r '.deployment.id' <<<"$deployed")"
    base="$(envctl deployments list --env "$PARENT" --active -o json | jq -r '.[0].id // empty')"
    if [ -z "$base" ]; then
      echo "$PARENT has no active deployment: $head is not compared."
      exit 0
    fi
    envctl deployments diff "$head" --base "$base" -o table
    diff="$(envctl deployments diff "$head" --base "$base" -o json)"

    # Changed: added or changed in the manifest, or whose entry file's content changed.
    files="$(jq -c '.files.added + .files.changed' <<<"$diff")"
    manifest="$dir/manifest.json"
    changed="$( { jq -r '.assets[] | select(.change != "removed") | .key' <<<"$diff"
                  jq -r --argjson files "$files" '.assets[] | select(.entry as $entry | $files | index($entry)) | .key' "$manifest"; } | sort -u)"
    if [ -z "$changed" ]; then
      echo "No asset changed: nothing to run."
      exit 0
    fi
    args=()
    while read -r key; do args+=(--asset "$key"); done <<<"$changed"
    echo "Running the changed assets: $(tr '\n' ' ' <<<"$changed")"
    ENVCTL_TOKEN="$limited" envctl runs start --env "$name" "${args[@]}" --watch -o table
    ;;
  close)
    envctl env delete "$name" --yes --force
    ;;
  *)
    echo "preview.sh: unknown action \"$action\" (open or close)" >&2
    exit 2
    ;;
esac
