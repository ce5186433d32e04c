#!/usr/bin/env bash
# serde-venv.sh: create (or reuse) the Python venv with Confluent's schema-registry serializers
# (confluent-kafka with its avro, protobuf, json and schemaregistry extras, pinned in
# tools/pyfluss/serde-requirements.txt), used by tools/pyfluss/serde_produce.py, and print the
# path of its python on stdout. Kept apart from the pyfluss venv (.cache/venv) so that neither
# pins the other's protobuf or pyarrow. Idempotent: when the venv exists and was built from the
# same requirements file, it returns at once.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${SERDE_PY_VENV:-$REPO_ROOT/.cache/venv-serde}
REQUIREMENTS=$REPO_ROOT/tools/pyfluss/serde-requirements.txt
PYTHON=${PYTHON:-python3}

log() { printf 'serde-venv: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

want=$(sha256sum <"$REQUIREMENTS" | cut -d' ' -f1)
stamp="$VENV/.requirements.sha256"
ready() { [[ -x $VENV/bin/python && -f $stamp && $(cat "$stamp") == "$want" ]]; }
if ready; then
	printf '%s\n' "$VENV/bin/python"
	exit 0
fi

command -v "$PYTHON" >/dev/null 2>&1 || die "python3 (3.10 or newer) is required; install it: apt-get install python3 python3-venv"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
	die "grpcio-tools 1.85 needs Python 3.10 or newer; $PYTHON is $("$PYTHON" --version 2>&1)"
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null ||
	die "the python venv module is missing; install it: apt-get install python3-venv"

mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock -w 600 9 || die "timed out waiting for another serde-venv.sh"
# Someone else may have finished it while we waited.
if ready; then
	printf '%s\n' "$VENV/bin/python"
	exit 0
fi
start=$(date +%s)
log "creating $VENV with $("$PYTHON" --version 2>&1)"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV" >&2
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQUIREMENTS" >&2 ||
	die "pip install -r $REQUIREMENTS failed"
"$VENV/bin/python" -c '
import confluent_kafka, fastavro, google.protobuf, jsonschema, grpc_tools.protoc
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
' || die "the serializers do not import in $VENV"
printf '%s\n' "$want" >"$stamp"
log "venv ready in $(($(date +%s) - start))s"
printf '%s\n' "$VENV/bin/python"
