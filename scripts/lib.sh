# shellcheck shell=bash
# Shared by scripts/test.sh, compat.sh and bench.sh, which source it after
# setting root (the repository) and cd'ing there; it runs nothing itself.

step() { echo "==> $*"; }

# as_root runs a command as root, through sudo when needed and available.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo -n "$@"
	else
		echo "$(basename "$0"): need root to run: $*" >&2
		exit 1
	fi
}

# apt_install installs Debian packages, running apt-get update first once.
apt_updated=0
apt_install() {
	if [ "$apt_updated" -eq 0 ]; then
		step "apt-get update"
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
		apt_updated=1
	fi
	step "apt-get install $*"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

# start_private_ddblocal NAME starts a DynamoDB Local of this run's own
# (state in a fresh .cache/ddblocal/NAME.XXXXXX, so it never stops one a
# developer started with scripts/dynamodb-local.sh), stops it when the script
# exits (also on failure or interruption), and exports
# REDAMO_TEST_DYNAMODB_ENDPOINT.
start_private_ddblocal() {
	mkdir -p "$root/.cache/ddblocal"
	export REDAMO_DDBLOCAL_STATE
	REDAMO_DDBLOCAL_STATE="$(mktemp -d "$root/.cache/ddblocal/$1.XXXXXX")"
	trap stop_private_ddblocal EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	step "starting DynamoDB Local"
	REDAMO_TEST_DYNAMODB_ENDPOINT="$("$root/scripts/dynamodb-local.sh" start)"
	export REDAMO_TEST_DYNAMODB_ENDPOINT
}

stop_private_ddblocal() {
	local rc=$?
	step "stopping DynamoDB Local"
	"$root/scripts/dynamodb-local.sh" stop || true
	rm -rf "$REDAMO_DDBLOCAL_STATE"
	exit "$rc"
}
