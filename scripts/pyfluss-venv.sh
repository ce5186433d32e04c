#!/usr/bin/env bash
# pyfluss-venv.sh: create (or reuse) the Python venv with the pinned pyfluss client used by the
# e2e tests, and print the path of its python on stdout. Idempotent: when the venv exists and
# was built from the same tools/pyfluss/requirements.txt, it returns at once.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${FLUSS_PY_VENV:-$REPO_ROOT/.cache/venv}
REQUIREMENTS=$REPO_ROOT/tools/pyfluss/requirements.txt
PYTHON=${PYTHON:-python3}

log() { printf 'pyfluss-venv: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

want=$(sha256sum <"$REQUIREMENTS" | cut -d' ' -f1)
stamp="$VENV/.requirements.sha256"
if [[ -x $VENV/bin/python && -f $stamp && $(cat "$stamp") == "$want" ]]; then
	printf '%s\n' "$VENV/bin/python"
	exit 0
fi

command -v "$PYTHON" >/dev/null 2>&1 || die "python3 (3.9 to 3.12) is required; install it: apt-get install python3 python3-venv"
version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case $version in
3.9 | 3.10 | 3.11 | 3.12) ;;
*) log "warning: pyfluss ships wheels for CPython 3.9 to 3.12; $PYTHON is $version" ;;
esac
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null ||
	die "the python venv module is missing; install it: apt-get install python3-venv"

mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock -w 600 9 || die "timed out waiting for another pyfluss-venv.sh"
# Someone else may have finished it while we waited.
if [[ -x $VENV/bin/python && -f $stamp && $(cat "$stamp") == "$want" ]]; then
	printf '%s\n' "$VENV/bin/python"
	exit 0
fi
start=$(date +%s)
log "creating $VENV with $("$PYTHON" --version 2>&1)"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV" >&2
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQUIREMENTS" >&2 ||
	die "pip install -r $REQUIREMENTS failed"
"$VENV/bin/python" -c 'import fluss, pyarrow' || die "pyfluss does not import in $VENV"
printf '%s\n' "$want" >"$stamp"
log "venv ready in $(($(date +%s) - start))s"
printf '%s\n' "$VENV/bin/python"
