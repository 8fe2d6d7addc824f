#!/usr/bin/env bash
# What `make bench` runs, in about five minutes:
#   1. Go benchmarks of the command path on the memory store (bench/).
#   2. redis-benchmark GET/SET/INCR over TCP against a real redis-server,
#      redamo on the memory store and redamo on DynamoDB Local, in the same
#      run: throughput (-c 50 -P 16) and one-client latency, side by side with
#      the ratio redamo/redis; redis and the memory store take turns for
#      REDAMO_BENCH_ROUNDS rounds, the median kept, with CPU time per request.
#   3. On DynamoDB Local, one client: each hot command through redamo vs the
#      single raw DynamoDB request it maps to (bench/benchtool compare), the
#      same for LPUSH/RPOP/SADD/HSET on small collections and for those and
#      ZADD/ZPOPMIN on collections of REDAMO_BENCH_DDB_LARGE entries (vs one
#      raw UpdateItem ADD of a counter; small ones also vs the raw UpdateItem
#      making the same change), with the time each took to build, and reads
#      of 1,000-entry collections next to redis-server's.
#   4. One client, on the memory store and redis-server: single-entry commands
#      on a list, a set, a hash and a sorted set of REDAMO_BENCH_LARGE entries
#      (benchtool large), with the time each took to build with 100- and
#      1,000-entry commands.
#   4c. Every command family (strings, lists, transactions, locks, queues,
#      scripts) through three instances on one embedded store in its
#      AWS-faithful mode at 1, 16 and 64 clients (benchtool faithful):
#      throughput, p50/p99, error replies by kind, units and dollars per
#      command, and each family's invariant checked at the end.
#   4d. One hot key (benchtool hotkey): every client on the same key, 1, 16,
#      64 and 256 clients through one and three instances served in one
#      process, on the embedded store limited per partition as DynamoDB is
#      (1,000 write / 3,000 read units per second) and on its AWS-faithful
#      mode, for INCR, GET, SET, LPUSH+RPOP, SADD, ZADD and ZINCRBY (a small
#      sorted set), ZADD (a large one), QUEUE.PUSH+POP+ACK and
#      CL.THROTTLE: throughput, p50/p99, the store's requests and read and
#      write units per command (and per message or element for the
#      workloads of several commands), error replies.
#   5. RSS of redamo (and redis-server) idle and with 1,000 idle connections.
#   6. DynamoDB requests, read and write units per command and dollars per
#      million operations at on-demand prices, beside the floor, from INFO
#      (redamo section) of the DynamoDB-backed instance.
#   7. The shell CLI: wall time per `redamo get` call, one process after the
#      other, in-process on DynamoDB Local (no server) and with --server,
#      next to redis-cli for the cost of starting a process at all.
# Everything it starts is stopped on exit, also on failure or Ctrl-C.
#
# Environment (defaults in brackets):
#   REDAMO_BENCH_N        requests per test, redis and memory store [200000]
#   REDAMO_BENCH_ROUNDS   throughput rounds on redis and the memory store, the
#                         median kept [5]
#   REDAMO_BENCH_DDB_N    requests per test, DynamoDB Local [5000]
#   REDAMO_BENCH_DDB_P    pipeline depth against DynamoDB Local [1]: one JVM on a
#                         small machine cannot hold 50x16 requests in flight
#                         without requests timing out (redamo then answers
#                         -ERR ... unavailable, as it should under overload)
#   REDAMO_BENCH_LAT_N    requests per one-client latency test [20000; /10 on DynamoDB]
#   REDAMO_BENCH_TIME     go test -benchtime [1s]
#   REDAMO_BENCH_LARGE    entries of the large list/set/hash/sorted set on the
#                         memory store, built with 100- and 1,000-entry commands [100000]
#   REDAMO_BENCH_DDB_LARGE the same on DynamoDB Local, 1,000-entry commands [20000]:
#                         its JVM takes minutes over 100,000
#   REDAMO_BENCH_CONNS    idle connections for the RSS figure [1000]
#   REDAMO_BENCH_CLI_N    redamo get calls per CLI figure [200]
#   REDAMO_BENCH_FAITHFUL_D time per family and client count on the AWS-faithful store [5s]
#   REDAMO_BENCH_HOT_D    measured time per hot-key cell (store, instances,
#                         clients, workload) [2s]; each cell first runs
#                         REDAMO_BENCH_HOT_WARMUP unmeasured [500ms], which
#                         spends the burst its partition saved meanwhile
#   REDAMO_BENCH_HOT_CLIENTS, REDAMO_BENCH_HOT_INSTANCES, REDAMO_BENCH_HOT_STORES,
#   REDAMO_BENCH_HOT_WORKLOADS  the hot-key part's cells [1,16,64,256], [1,3],
#                         [limited,faithful], [incr,get,set,lpush+rpop,sadd,zadd,zincrby,
#                         zadd-large,queue,throttle]
#   REDAMO_BENCH_SKIP     space-separated parts to skip: go tcp compare large queue faithful hotkey rss cli
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

N="${REDAMO_BENCH_N:-200000}"
ROUNDS="${REDAMO_BENCH_ROUNDS:-5}"
DDB_N="${REDAMO_BENCH_DDB_N:-5000}"
DDB_P="${REDAMO_BENCH_DDB_P:-1}"
LAT_N="${REDAMO_BENCH_LAT_N:-20000}"
BENCHTIME="${REDAMO_BENCH_TIME:-1s}"
CONNS="${REDAMO_BENCH_CONNS:-1000}"
LARGE="${REDAMO_BENCH_LARGE:-100000}"
DDB_LARGE="${REDAMO_BENCH_DDB_LARGE:-20000}"
CLI_N="${REDAMO_BENCH_CLI_N:-200}"
FAITHFUL_D="${REDAMO_BENCH_FAITHFUL_D:-5s}"
HOT_D="${REDAMO_BENCH_HOT_D:-2s}"
HOT_WARMUP="${REDAMO_BENCH_HOT_WARMUP:-500ms}"
HOT_CLIENTS="${REDAMO_BENCH_HOT_CLIENTS:-1,16,64,256}"
HOT_INSTANCES="${REDAMO_BENCH_HOT_INSTANCES:-1,3}"
HOT_STORES="${REDAMO_BENCH_HOT_STORES:-limited,faithful}"
HOT_WORKLOADS="${REDAMO_BENCH_HOT_WORKLOADS:-incr,get,set,lpush+rpop,sadd,zadd,zincrby,zadd-large,queue,throttle}"
SKIP=" ${REDAMO_BENCH_SKIP:-} "

# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
step() { printf '\n==> %s\n' "$*"; } # a blank line between the parts
die() {
	echo "bench: error: $*" >&2
	exit 1
}
skipped() { [[ "$SKIP" == *" $1 "* ]]; }

# ---- prerequisites ----------------------------------------------------------------
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-benchmark >/dev/null 2>&1; then
	apt_install redis-server redis-tools
fi

# ---- process bookkeeping ----------------------------------------------------------
mkdir -p .cache
work="$(mktemp -d "$root/.cache/bench.XXXXXX")"
pids=()
declare -A pid_of=()
ddb_started=0

cleanup() {
	local rc=$? pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	if [ "$ddb_started" -eq 1 ]; then
		REDAMO_DDBLOCAL_STATE="$work/ddblocal" scripts/dynamodb-local.sh stop || true
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# free_port prints a port nothing is bound to (see benchtool port).
free_port() { "$work/benchtool" port; }

# wait_ping PORT PID NAME: waits until the server answers PING.
wait_ping() {
	for _ in $(seq 1 200); do
		kill -0 "$2" 2>/dev/null || die "$3 exited; log: $(tail -n 20 "$work/$3.log")"
		if [ "$(redis-cli -p "$1" ping 2>/dev/null)" = "PONG" ]; then
			return
		fi
		sleep 0.1
	done
	die "$3 did not answer PING on port $1"
}

# start NAME PORT CMD...: starts a server in the background, logs to $work/NAME.log.
start() {
	local name=$1 port=$2
	shift 2
	"$@" >"$work/$name.log" 2>&1 &
	local pid=$!
	pids+=("$pid")
	wait_ping "$port" "$pid" "$name"
	pid_of[$name]=$pid
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# ---- build ----------------------------------------------------------------------------
step "build"
version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
CGO_ENABLED=0 go build -ldflags "-X main.version=$version" -o "$work/redamo" ./cmd/redamo
go build -o "$work/benchtool" ./bench/benchtool
echo "redamo $version, $(go version | cut -d' ' -f3), $(nproc) CPUs, $(redis-server --version | cut -d' ' -f1-3)"

# ---- 1. Go benchmarks -----------------------------------------------------------------
if ! skipped go; then
	step "Go benchmarks: command path on the memory store (go test -bench . -benchmem ./bench/...)"
	go test -run '^$' -bench . -benchmem -benchtime "$BENCHTIME" ./bench/...
fi

# ---- servers --------------------------------------------------------------------------
redis_port="$(free_port)"
start redis "$redis_port" redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no

mem_port="$(free_port)"
start redamo-memory "$mem_port" "$work/redamo" --store memory --addr "127.0.0.1:$mem_port"

# DynamoDB Local separates tables by access key and region: the same fixed
# pair for redamo and benchtool.
export AWS_ACCESS_KEY_ID=redamobench AWS_SECRET_ACCESS_KEY=redamobench AWS_REGION=us-east-1
step "DynamoDB Local"
ddb_started=1
endpoint="$(REDAMO_DDBLOCAL_STATE="$work/ddblocal" scripts/dynamodb-local.sh start)"
table="bench_$(date +%s)"
ddb_port="$(free_port)"
start redamo-dynamodb "$ddb_port" "$work/redamo" --store dynamodb --endpoint "$endpoint" \
	--region us-east-1 --table "$table" --create-table --addr "127.0.0.1:$ddb_port"
echo "DynamoDB Local at $endpoint, table $table"

# ---- 2. redis-benchmark -------------------------------------------------------------
# bench_csv NAME PORT N ARGS...: one redis-benchmark run, CSV kept in
# $work/NAME.csv. A failed run (e.g. redamo answering -ERR ... unavailable
# when DynamoDB Local cannot keep up) is reported and shown as "failed" in
# the table rather than ending the whole benchmark.
bench_csv() {
	local name=$1 port=$2 n=$3
	shift 3
	if ! timeout 300 redis-benchmark -h 127.0.0.1 -p "$port" -t set,get,incr -r 100000 -n "$n" --csv "$@" \
		>"$work/$name.csv" 2>"$work/$name.err"; then
		echo "redis-benchmark against $name failed: $(grep -v '^WARNING' "$work/$name.err" | tail -n 3)"
	fi
	grep -v '^WARNING' "$work/$name.err" | sort | uniq -c | sed 's/^ */   (redis-benchmark, '"$name"') /' || true
}

# report TITLE SUFFIX: side-by-side table from $work/{redis,memory,dynamodb}SUFFIX.csv.
report() {
	echo
	echo "$1"
	local cpus=()
	[ -f "$work/redis-$2.cpu" ] && cpus=("$work/redis-$2.cpu" "$work/memory-$2.cpu")
	awk -F, '
		function unq(s) { gsub(/"/, "", s); return s }
		FNR == 1 { target = FILENAME; sub(/.*\//, "", target); cpufile = (target ~ /\.cpu$/); sub(/-.*/, "", target); next }
		cpufile { cpu[target, $1] = $2; next }
		{ t = unq($1); rps[target, t] = unq($2); p50[target, t] = unq($5); p99[target, t] = unq($7); tests[t] = 1 }
		END {
			printf "%-6s %-16s %12s %9s %9s %13s %11s\n", "test", "server", "ops/s", "p50 ms", "p99 ms", "vs redis", "CPU us/op"
			n = split("SET GET INCR", order, " ")
			for (i = 1; i <= n; i++) {
				t = order[i]
				m = split("redis memory dynamodb", srv, " ")
				for (j = 1; j <= m; j++) {
					s = srv[j]
					label = (s == "redis") ? "redis" : "redamo/" s
					if (!((s, t) in rps)) {
						printf "%-6s %-16s %12s\n", (j == 1 ? t : ""), label, "failed"
						continue
					}
					ratio = (s == "redis" || rps["redis", t] == 0) ? "" : sprintf("%.2fx", rps[s, t] / rps["redis", t])
					c = ((s, t) in cpu) ? sprintf("%.2f", cpu[s, t]) : ""
					printf "%-6s %-16s %12.0f %9.3f %9.3f %13s %11s\n", (j == 1 ? t : ""), label, rps[s, t], p50[s, t], p99[s, t], ratio, c
				}
			}
		}' "$work/redis-$2.csv" "$work/memory-$2.csv" "$work/dynamodb-$2.csv" "${cpus[@]}"
}

# cpu_ticks PID: the process's user+system CPU time so far, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# tput_rounds: redis-server and redamo on the memory store take turns,
# $ROUNDS rounds of one redis-benchmark run per test and server, each with
# the server's CPU time. Two cores are shared by redis-benchmark and the
# server, so one run's rate swings by 10-15%: the report keeps, per test,
# the round with the median rate ($work/{redis,memory}-tput.csv) and the
# median CPU time per request ($work/{redis,memory}-tput.cpu).
tput_rounds() {
	local t r name port pid c0 c1 tick
	tick="$(getconf CLK_TCK)"
	for t in SET GET INCR; do
		for r in $(seq 1 "$ROUNDS"); do
			for name in redis memory; do
				port="$redis_port" pid="${pid_of[redis]}"
				if [ "$name" = memory ]; then
					port="$mem_port" pid="${pid_of[redamo-memory]}"
				fi
				c0="$(cpu_ticks "$pid")"
				if ! timeout 300 redis-benchmark -h 127.0.0.1 -p "$port" -t "$t" -r 100000 -n "$N" -c 50 -P 16 --csv \
					>"$work/round.csv" 2>"$work/round.err"; then
					echo "redis-benchmark $t against $name failed: $(grep -v '^WARNING' "$work/round.err" | tail -n 3)"
					continue
				fi
				c1="$(cpu_ticks "$pid")"
				grep -v '^"test"' "$work/round.csv" >>"$work/$name-tput.rounds"
				awk -v t="$t" -v d=$((c1 - c0)) -v hz="$tick" -v n="$N" \
					'BEGIN { printf "%s,%.3f\n", t, d / hz * 1e6 / n }' >>"$work/$name-tput.cpus"
			done
		done
	done
	for name in redis memory; do
		median_rows "$work/$name-tput.rounds" 2 '"test","rps"' >"$work/$name-tput.csv"
		median_rows "$work/$name-tput.cpus" 2 'test,cpu_us' >"$work/$name-tput.cpu"
	done
}

# median_rows FILE COL HEADER: HEADER, then for each test (column 1) of the
# CSV lines in FILE the line whose column COL is the median (quotes ignored).
median_rows() {
	echo "$3"
	awk -F, -v col="$2" '
		function unq(s) { gsub(/"/, "", s); return s }
		{
			t = unq($1); k = ++n[t]; v[t, k] = unq($col) + 0; row[t, k] = $0
			# insertion sort by value within the test
			while (k > 1 && v[t, k - 1] > v[t, k]) {
				x = v[t, k]; v[t, k] = v[t, k - 1]; v[t, k - 1] = x
				x = row[t, k]; row[t, k] = row[t, k - 1]; row[t, k - 1] = x
				k--
			}
		}
		END { for (t in n) print row[t, int((n[t] + 1) / 2)] }' "$1"
}

if ! skipped tcp; then
	step "redis-benchmark: throughput, -c 50 -P 16 -r 100000, $ROUNDS rounds taking turns (p50/p99 are per pipelined batch)"
	tput_rounds
	# DynamoDB Local's JVM is slow until its code is compiled: warm it up.
	bench_csv dynamodb-warmup "$ddb_port" 500 -c 4
	bench_csv dynamodb-tput "$ddb_port" "$DDB_N" -c 50 -P "$DDB_P"
	report "Throughput, 50 clients (redis and memory: pipeline 16, $N requests per test; DynamoDB Local: pipeline $DDB_P, $DDB_N requests)" tput

	step "redis-benchmark: latency, one client, no pipelining"
	bench_csv redis-lat "$redis_port" "$LAT_N" -c 1 -P 1
	bench_csv memory-lat "$mem_port" "$LAT_N" -c 1 -P 1
	bench_csv dynamodb-lat "$ddb_port" $((LAT_N / 10)) -c 1 -P 1
	report "One client (redis and memory: $LAT_N requests per test; DynamoDB Local: $((LAT_N / 10)))" lat
fi

# ---- 3. redamo vs the raw DynamoDB request ---------------------------------------------
if ! skipped compare; then
	step "DynamoDB Local, one client: redamo command vs the raw SDK request it maps to"
	"$work/benchtool" compare --addr "127.0.0.1:$ddb_port" --endpoint "$endpoint" \
		--region us-east-1 --table "$table" --large "$DDB_LARGE" --redis-addr "127.0.0.1:$redis_port"
fi

# ---- 4. large collections on the memory store -------------------------------------------
if ! skipped large; then
	step "memory store, one client: single-entry commands on collections of $LARGE entries, next to redis-server"
	"$work/benchtool" large --addr "127.0.0.1:$mem_port" --redis-addr "127.0.0.1:$redis_port" --n "$LARGE"
fi

# ---- 4b. one queue by shard count, partitions limited as DynamoDB's ----------------------
if ! skipped queue; then
	step "memory store with --partition-limit (1,000 WCU / 3,000 RCU per partition per second): one queue's throughput by shard count, 64 clients"
	p="$(free_port)"
	start queue "$p" "$work/redamo" --store memory --partition-limit --addr "127.0.0.1:$p"
	"$work/benchtool" queue --addr "127.0.0.1:$p" --shards 1,2,4,8 --clients 64 --duration 3s
	kill "${pid_of[queue]}" 2>/dev/null || true
fi

# ---- 4c. every family through three instances on the AWS-faithful store ----------------
if ! skipped faithful; then
	step "embedded store in its AWS-faithful mode, three in-process instances: per family and client count, throughput, p50/p99, error replies per 10,000, units and dollars per command, invariants"
	"$work/benchtool" faithful --instances 3 --clients 1,16,64 --duration "$FAITHFUL_D"
fi

# ---- 4d. one hot key --------------------------------------------------------------------
if ! skipped hotkey; then
	step "one hot key: clients $HOT_CLIENTS through instances $HOT_INSTANCES (in-process), stores $HOT_STORES: throughput, p50/p99, requests and units per command"
	"$work/benchtool" hotkey --stores "$HOT_STORES" --instances "$HOT_INSTANCES" --clients "$HOT_CLIENTS" \
		--workloads "$HOT_WORKLOADS" --duration "$HOT_D" --warmup "$HOT_WARMUP"
fi

# ---- 5. memory --------------------------------------------------------------------------
# idle_rss NAME PORT CMD...: RSS of a fresh server listening on PORT, idle and
# with $CONNS idle connections.
idle_rss() {
	local name=$1 port=$2 pid idle held fifo
	shift 2
	start "rss-$name" "$port" "$@"
	pid="${pid_of[rss-$name]}"
	sleep 0.5
	idle="$(rss_kb "$pid")"
	fifo="$work/hold-$name"
	mkfifo "$fifo"
	# benchtool holds the connections until its stdin (the fifo) closes.
	"$work/benchtool" conns --addr "127.0.0.1:$port" --n "$CONNS" <"$fifo" >"$work/conns-$name.out" 2>&1 &
	local holder=$!
	pids+=("$holder")
	exec 4>"$fifo"
	for _ in $(seq 1 300); do
		grep -q ready "$work/conns-$name.out" 2>/dev/null && break
		kill -0 "$holder" 2>/dev/null || die "benchtool conns: $(cat "$work/conns-$name.out")"
		sleep 0.1
	done
	grep -q ready "$work/conns-$name.out" || die "benchtool conns did not get $CONNS connections"
	sleep 0.5
	held="$(rss_kb "$pid")"
	exec 4>&-
	wait "$holder" || true
	kill "$pid" 2>/dev/null || true
	awk -v n="$name" -v i="$idle" -v h="$held" -v c="$CONNS" 'BEGIN {
		printf "%-14s idle %7d KB   with %d idle connections %7d KB   (%.1f KB per connection)\n", n, i, c, h, (h - i) / c }'
}

if ! skipped rss; then
	step "memory: VmRSS of a fresh process, idle and with $CONNS idle connections"
	if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((CONNS + 100)) ]; then
		ulimit -n $((CONNS + 100)) 2>/dev/null || die "ulimit -n $(ulimit -n) is too low for $CONNS connections"
	fi
	p="$(free_port)"
	idle_rss redamo "$p" "$work/redamo" --store memory --addr "127.0.0.1:$p"
	p="$(free_port)"
	idle_rss redis-server "$p" redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no
fi

# ---- 6. DynamoDB requests per command -----------------------------------------------
step "DynamoDB requests, units and dollars per command (INFO redamo and commandstats of the DynamoDB-backed instance, all runs above)"
redis-cli -p "$ddb_port" info redamo | tr -d '\r' >"$work/info-redamo.txt"
cat "$work/info-redamo.txt"
echo
# Per command: requests, read and write units per call and dollars per
# million calls at on-demand prices, beside the floor (benchtool cost,
# after 200 messages pushed, popped and acknowledged one at a time).
"$work/benchtool" cost --local --queue 200 --addr "127.0.0.1:$ddb_port"

# ---- 7. the shell CLI ----------------------------------------------------------------
# per_call_ms N CMD...: runs CMD N times, one after the other (each must
# exit 0), and prints the mean wall time per call in milliseconds.
per_call_ms() {
	local n=$1 t0 t1
	shift
	t0=$(date +%s%N)
	for _ in $(seq 1 "$n"); do
		"$@" >/dev/null || die "$* failed"
	done
	t1=$(date +%s%N)
	awk -v d=$((t1 - t0)) -v n="$n" 'BEGIN { printf "%.2f", d / n / 1e6 }'
}

# cli_row LABEL N CMD...: one line of the CLI table.
cli_row() {
	local label=$1 ms
	shift
	ms="$(per_call_ms "$@")"
	printf "%-58s %10s\n" "$label" "$ms"
}

if ! skipped cli; then
	step "shell CLI: wall time per call, $CLI_N calls one after the other (a process each)"
	ddb=(--endpoint "$endpoint" --region us-east-1 --table "$table")
	"$work/redamo" set cli:bench value "${ddb[@]}" >/dev/null
	redis-cli -p "$redis_port" set cli:bench value >/dev/null
	"$work/redamo" set cli:bench value --server "127.0.0.1:$mem_port" >/dev/null
	printf "%-58s %10s\n" "call" "ms/call"
	cli_row "redamo get, in-process on DynamoDB Local (no server)" "$CLI_N" "$work/redamo" get cli:bench "${ddb[@]}"
	cli_row "redamo get --server (redamo on DynamoDB Local)" "$CLI_N" "$work/redamo" get cli:bench --server "127.0.0.1:$ddb_port"
	cli_row "redamo get --server (redamo, memory store)" "$CLI_N" "$work/redamo" get cli:bench --server "127.0.0.1:$mem_port"
	cli_row "redis-cli get (redis-server): starting a process at all" "$CLI_N" redis-cli -p "$redis_port" get cli:bench
fi
