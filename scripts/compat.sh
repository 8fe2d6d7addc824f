#!/usr/bin/env bash
# What `make compat` runs: the differential suite against a real redis-server
# on every backend, and the regeneration of docs/compat.md.
#
# Installs what is missing (redis-server from Debian, ioredis with npm ci,
# python3-redis), starts a private DynamoDB Local (scripts/dynamodb-local.sh)
# unless REDAMO_TEST_DYNAMODB_ENDPOINT is already set, runs
# `go test ./compat -run TestReport -update` (every case on every backend,
# then the report), then the rest of the compat package (random workload,
# client smoke tests), and stops DynamoDB Local again.
#
# Environment:
#   REDAMO_COMPAT_RANDOM_DURATION  random workload time (Go duration, default 20s)
#   REDAMO_COMPAT_SEED             replay a random workload run
#   GOTESTFLAGS                    extra go test flags
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
have_py_redis=0
for py in /usr/bin/python3 python3; do
	if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import redis' >/dev/null 2>&1; then
		have_py_redis=1
	fi
done
[ "$have_py_redis" -eq 1 ] || missing+=(python3 python3-redis)
command -v node >/dev/null 2>&1 || missing+=(nodejs npm)
if [ "${#missing[@]}" -gt 0 ]; then
	apt_install "${missing[@]}"
fi

step "npm ci (ioredis, pinned in compat/clients/node/package-lock.json)"
(cd compat/clients/node && npm ci --no-audit --no-fund --loglevel=error)

if [ -z "${REDAMO_TEST_DYNAMODB_ENDPOINT:-}" ]; then
	start_private_ddblocal compat
fi
export REDAMO_TEST_REQUIRE_DYNAMODB=1
read -r -a extra <<<"${GOTESTFLAGS:-}"

status=0
step "compat cases on every backend, then docs/compat.md"
# -v for the summary; the per-case RUN/PASS lines are filtered out.
if ! go test -count=1 -timeout 30m "${extra[@]}" ./compat -run '^TestReport$' -update -v 2>&1 |
	{ grep -Ev '^ *(=== (RUN|PAUSE|CONT)|--- PASS)' || true; }; then
	status=1
fi
step "random workload, client smoke tests, unit tests"
# -v for the seed, the number of commands compared and the client versions.
if ! go test -count=1 -timeout 30m "${extra[@]}" ./compat/... -skip '^(TestReport|TestCases)$' -v 2>&1 |
	{ grep -E 'seed|commands compared|checks passed|drawing from|mismatch|reproducer|^ *--- FAIL|^(FAIL|ok|PASS)|Error Trace:|Error:' || true; }; then
	status=1
fi
if [ "$status" -eq 0 ]; then
	step "compat: all identical (docs/compat.md regenerated)"
else
	step "compat: FAILED (docs/compat.md regenerated; see the mismatches above)"
fi
exit "$status"
