#!/usr/bin/env bash
# with-fluss.sh CMD [ARGS...]: run CMD with env FLUSS_BOOTSTRAP pointing at a Fluss cluster.
# When FLUSS_BOOTSTRAP is already set, CMD runs against that cluster. Otherwise one cluster
# (FLUSS_TABLET_SERVERS tablet servers, default 1) is started through scripts/fluss-local.sh for
# the whole command, exported as FLUSS_BOOTSTRAP and FLUSS_LOCAL_CLUSTER, and stopped afterwards
# (also when CMD fails or the script is interrupted). The exit status is CMD's.
set -euo pipefail

[[ $# -gt 0 ]] || {
	echo "usage: scripts/with-fluss.sh CMD [ARGS...]" >&2
	exit 2
}
if [[ -n ${FLUSS_BOOTSTRAP:-} ]]; then
	exec "$@"
fi

script="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fluss-local.sh"
name="run-$$"
args=(start -s "$name" -o "$$")
[[ -n ${FLUSS_TABLET_SERVERS:-} ]] && args+=(-n "$FLUSS_TABLET_SERVERS")
[[ -n ${FLUSS_VERSION:-} ]] && args+=(-v "$FLUSS_VERSION")
# FLUSS_SETTINGS: space-separated key=value server settings (fluss-local.sh -D).
for kv in ${FLUSS_SETTINGS:-}; do args+=(-D "$kv"); done

out=$("$script" "${args[@]}")
trap '"$script" stop -s "$name" || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
FLUSS_BOOTSTRAP=${out#FLUSS_BOOTSTRAP=}
export FLUSS_BOOTSTRAP FLUSS_LOCAL_CLUSTER=$name
echo "with-fluss: FLUSS_BOOTSTRAP=$FLUSS_BOOTSTRAP FLUSS_LOCAL_CLUSTER=$name" >&2

rc=0
"$@" || rc=$?
exit "$rc"
