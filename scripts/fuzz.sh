#!/usr/bin/env bash
# What `make fuzz` runs: the whole-surface fuzzer (fuzz/) for a long time
# with a random seed, on the memory store and on DynamoDB Local (a private
# one unless REDAMO_TEST_DYNAMODB_ENDPOINT is set), its error-class
# comparison with a real redis-server, then each native fuzz target
# (go test -fuzz) of the RESP reader and the argument parsers for a while.
#
# Every finding is printed with its seed and a shrunk reproducer in the
# format of fuzz/testdata/regressions.txt (also written to
# REDAMO_FUZZ_OUT); add it there with the fix.
#
# Environment:
#   REDAMO_FUZZ_DURATION  time for the generated cases (Go duration, default
#                         10m): half on the memory store, a quarter on
#                         DynamoDB Local, a quarter compared with Redis
#   REDAMO_FUZZ_SEED      first seed (default: from the clock, printed)
#   REDAMO_FUZZ_OUT       where reproducers go (default .cache/fuzz)
#   REDAMO_FUZZ_RACE=1    build the server with the race detector
#   FUZZTIME              time per native fuzz target (default 30s; 0 skips)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"

command -v redis-server >/dev/null 2>&1 || apt_install redis-server
if [ -z "${REDAMO_TEST_DYNAMODB_ENDPOINT:-}" ]; then
	start_private_ddblocal fuzz
fi
export REDAMO_TEST_REQUIRE_DYNAMODB=1
export REDAMO_FUZZ_DURATION="${REDAMO_FUZZ_DURATION:-10m}"
export REDAMO_FUZZ_SEED="${REDAMO_FUZZ_SEED:-$(date +%s%N | cut -c1-12)}"
export REDAMO_FUZZ_OUT="${REDAMO_FUZZ_OUT:-$root/.cache/fuzz}"
mkdir -p "$REDAMO_FUZZ_OUT"
fuzztime="${FUZZTIME:-30s}"

status=0
step "fuzz: generated cases for $REDAMO_FUZZ_DURATION from seed $REDAMO_FUZZ_SEED (reproducers in $REDAMO_FUZZ_OUT)"
# -v for the counts, the seeds and the findings; the RUN lines are dropped.
if ! go test -count=1 -timeout 0 ./fuzz -run '^(TestSurface|TestErrorClasses)$' -v 2>&1 |
	{ grep --line-buffered -Ev '^ *(=== (RUN|PAUSE|CONT)|--- PASS)' || true; }; then
	status=1
fi
if [ "$fuzztime" != 0 ]; then
	for target in ./resp:FuzzParser ./commands:FuzzArgParsers ./commands:FuzzGlobMatch \
		./commands:FuzzStreamID ./commands:FuzzScoreRange ./commands:FuzzBlockTimeout \
		./commands:FuzzParseScanCursor ./model:FuzzString2ll ./internal/rdb:FuzzRestore; do
		pkg="${target%%:*}" name="${target##*:}"
		step "go test -fuzz $name ($pkg) for $fuzztime"
		if ! go test "$pkg" -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" 2>&1 | tail -n 3; then
			status=1
		fi
	done
fi
if [ "$status" -eq 0 ]; then
	step "fuzz: nothing found (seed $REDAMO_FUZZ_SEED)"
else
	step "fuzz: FOUND something (seed $REDAMO_FUZZ_SEED; see the reproducers above and in $REDAMO_FUZZ_OUT)"
fi
exit "$status"
