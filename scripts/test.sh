#!/usr/bin/env bash
# What `make test` runs: installs the prerequisites that are missing, starts a
# private DynamoDB Local, runs every Go test against it, stops it (also when
# the tests fail or the run is interrupted) and exits with go test's status.
#
# Environment:
#   REDAMO_TEST_RACE     package patterns tested with the race detector
#                        (default: the storage, command and protocol layers,
#                        whose tests run concurrent clients on shared items);
#                        "" turns it off.
#   REDAMO_TEST_TIMEOUT  go test -timeout (default 20m).
#   GOTESTFLAGS          extra go test flags, e.g. "-run TestFoo -v".
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"

# ---- prerequisites ------------------------------------------------------------
# The compat suite diffs against a real redis-server and drives redis-py;
# the client tests drive ioredis and node-redlock (npm, compat/clients/node)
# and socket.io's Redis adapter (compat/clients/socketio).
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server redis-tools)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import redis' >/dev/null 2>&1; then
	missing+=(python3-redis)
fi
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ]; then
	apt_install "${missing[@]}"
else
	step "prerequisites present (redis-server, python3-redis, node, npm)"
fi

# The packages pinned in package-lock.json; npm ci only when one is missing
# or at another version (npm ls fails then), since it reinstalls everything.
for client in "node: ioredis, redlock" "socketio: socket.io, socket.io-client, @socket.io/redis-adapter, ioredis"; do
	dir="compat/clients/${client%%:*}"
	if (cd "$dir" && npm ls --depth=0 >/dev/null 2>&1); then
		step "npm packages present ($dir:${client#*:})"
	else
		step "npm ci ($dir:${client#*:}, pinned in package-lock.json)"
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
	fi
done

step "go mod download"
go mod download

# ---- DynamoDB Local -------------------------------------------------------------
# A private state directory: this run starts and stops its own instance and
# never touches one a developer started with scripts/dynamodb-local.sh.
start_private_ddblocal test
export REDAMO_TEST_REQUIRE_DYNAMODB=1
step "REDAMO_TEST_DYNAMODB_ENDPOINT=$REDAMO_TEST_DYNAMODB_ENDPOINT REDAMO_TEST_REQUIRE_DYNAMODB=1"

# ---- go test --------------------------------------------------------------------
timeout="${REDAMO_TEST_TIMEOUT:-20m}"
race_patterns="${REDAMO_TEST_RACE-./dynastore/... ./model/... ./coord/... ./commands/... ./scripting/... ./wait/... ./pubsub/... ./bus/... ./resp/...}"
read -r -a extra <<<"${GOTESTFLAGS:-}"

# The race detector needs cgo and a C compiler; without them those packages
# run without it rather than failing the run.
race_ok=1
if [ "$(go env CGO_ENABLED)" != 1 ] || ! command -v "$(go env CC)" >/dev/null 2>&1; then
	race_ok=0
fi

all_pkgs=$(go list ./...)
race_pkgs=""
if [ -n "$race_patterns" ] && [ "$race_ok" -eq 1 ]; then
	# shellcheck disable=SC2086 # patterns are words on purpose
	race_pkgs=$(go list $race_patterns 2>/dev/null || true)
elif [ -n "$race_patterns" ]; then
	step "no cgo/C compiler: running without the race detector"
fi
plain_pkgs=$(comm -23 <(sort <<<"$all_pkgs") <(sort <<<"$race_pkgs" | sed '/^$/d'))

status=0
start=$SECONDS
if [ -n "$race_pkgs" ]; then
	step "go test -race -count=1 -timeout $timeout ${extra[*]} ($(wc -w <<<"$race_pkgs") packages)"
	# shellcheck disable=SC2086
	go test -race -count=1 -timeout "$timeout" "${extra[@]}" $race_pkgs || status=$?
fi
if [ -n "$plain_pkgs" ]; then
	step "go test -count=1 -timeout $timeout ${extra[*]} ($(wc -w <<<"$plain_pkgs") packages)"
	# shellcheck disable=SC2086
	go test -count=1 -timeout "$timeout" "${extra[@]}" $plain_pkgs || status=$?
fi
if [ "$status" -eq 0 ]; then
	step "all tests passed in $((SECONDS - start))s"
else
	step "tests FAILED (exit $status) after $((SECONDS - start))s"
fi
exit "$status"
