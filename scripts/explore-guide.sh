#!/usr/bin/env bash
# Runs every ```sh block of docs/explore.md, in order, in one shell with
# errexit, against the environment `make up` kept under NAME (default
# explore): the guide is its own test. `make test-explore` brings the
# environment up first and down afterwards. Each block's heading and time
# are printed; the first failing command stops it.
set -o errexit -o nounset -o pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
GUIDE=${GUIDE:-docs/explore.md}
export NAME=${NAME:-explore}
# A step must fail when a command in it does: nothing may swallow a status.
if grep -nE '\|\|[[:space:]]*(true|:)([[:space:];)]|$)' "$GUIDE" >&2; then
  echo "explore-guide: $GUIDE hides a command's failure (the lines above): a failed kubectl would read as success" >&2
  exit 1
fi
[[ -s _explore/$NAME/env.json ]] || { echo "explore-guide: no environment \"$NAME\" is up (make up NAME=$NAME)" >&2; exit 1; }

script=$(mktemp)
trap 'rm -f "$script"' EXIT
awk '
  /^## / { heading = substr($0, 4); gsub(/\047/, "", heading) }
  /^```sh$/ { n++; printf "printf \"\\n[explore-guide %%s] step %d: %%s\\n\" \"$(date -u +%%H:%%M:%%S)\" %c%s%c\nstep_start=$SECONDS\n", n, 39, heading, 39; inblock = 1; next }
  /^```$/ && inblock { printf "printf \"[explore-guide] step %d done in %%ss\\n\" $((SECONDS - step_start))\n", n; inblock = 0; next }
  inblock { print }
' "$GUIDE" >"$script"
steps=$(grep -c '^```sh$' "$GUIDE")
echo "explore-guide: $steps steps of $GUIDE against \"$NAME\""
start=$SECONDS
bash -o errexit -o nounset -o pipefail -x "$script"
echo "explore-guide: all $steps steps passed in $((SECONDS - start))s"
