#!/usr/bin/env bash
# demo.sh: the one-command demo (`make demo`).
#
#  1. builds the gateway, fluss-admin and demo-producer into .cache/demo/bin;
#  2. starts a local Fluss cluster named "demo" (scripts/fluss-local.sh), or reuses a running one
#     (or the cluster of env FLUSS_BOOTSTRAP);
#  3. creates the tables of configs/gateway.yaml's routes (scripts/demo/tables.yaml);
#  4. starts the gateway with configs/gateway.yaml, pointed at that cluster;
#  5. produces a few thousand records with a Kafka client (tools/demo-producer, franz-go);
#  6. reads them back out of Fluss with pyfluss (scripts/pyfluss-venv.sh makes its venv);
#  7. prints metric highlights, then keeps the gateway running until Ctrl-C, which stops the
#     gateway and the cluster the demo started.
#
# Environment: DEMO_KAFKA_PORT (9092), DEMO_ADMIN_PORT (9464), FLUSS_DEMO_CLUSTER (demo),
# DEMO_ORDERS (3000), DEMO_WAIT (1; 0 exits after step 7 instead of waiting for Ctrl-C),
# FLUSS_BOOTSTRAP (use that cluster instead of starting one).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"

name=${FLUSS_DEMO_CLUSTER:-demo}
kafka_port=${DEMO_KAFKA_PORT:-9092}
admin_port=${DEMO_ADMIN_PORT:-9464}
orders=${DEMO_ORDERS:-3000}
customers=200
deletes=20
wait_for_ctrl_c=${DEMO_WAIT:-1}

bold=$'\e[1m' reset=$'\e[0m'
[[ -t 1 ]] || bold='' reset=''
step() { printf '\n%s==> %s%s\n' "$bold" "$*" "$reset"; }
die() {
	printf 'demo: error: %s\n' "$*" >&2
	exit 1
}

for tool in go curl setsid; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is required (see the README's prerequisites)"
done
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port_free "$kafka_port" || die "port $kafka_port is in use; run with DEMO_KAFKA_PORT=<free port>"
port_free "$admin_port" || die "port $admin_port is in use; run with DEMO_ADMIN_PORT=<free port>"

work=$(mktemp -d "${TMPDIR:-/tmp}/fluss-gateway-demo.XXXXXX")
started_cluster=0
gateway_pid=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $gateway_pid ]] && kill -0 "$gateway_pid" 2>/dev/null; then
		step "stopping the gateway (SIGTERM: answer what was read, flush, exit)"
		kill -TERM "$gateway_pid" 2>/dev/null || true
		if wait "$gateway_pid"; then
			echo "gateway stopped cleanly"
		else
			echo "gateway exited with status $?; its log: $work/gateway.log" >&2
			tail -n 20 "$work/gateway.log" >&2 || true
			rc=1
			work= # keep the log
		fi
	fi
	if ((started_cluster)); then
		step "stopping the Fluss cluster '$name'"
		scripts/fluss-local.sh stop -s "$name" || true
	fi
	[[ -n $work ]] && rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
# Ctrl-C while the demo waits for it is the normal end (status 0); earlier it aborts (130).
waiting=0
on_signal() {
	if ((waiting)); then exit 0; fi
	exit 130
}
trap on_signal INT TERM

step "building the gateway, fluss-admin and demo-producer"
bin=$REPO_ROOT/.cache/demo/bin
mkdir -p "$bin"
go build -o "$bin/" ./cmd/gateway ./tools/fluss-admin ./tools/demo-producer

step "starting a local Fluss cluster"
if [[ -n ${FLUSS_BOOTSTRAP:-} ]]; then
	bootstrap=$FLUSS_BOOTSTRAP
	echo "using FLUSS_BOOTSTRAP=$bootstrap (not stopped at the end)"
elif out=$(scripts/fluss-local.sh bootstrap -s "$name" 2>/dev/null); then
	bootstrap=${out#FLUSS_BOOTSTRAP=}
	echo "reusing the running cluster '$name' at $bootstrap (not stopped at the end)"
else
	started_cluster=1 # set first: a Ctrl-C during the start still stops what was started
	out=$(scripts/fluss-local.sh start -s "$name")
	bootstrap=${out#FLUSS_BOOTSTRAP=}
	echo "Fluss cluster '$name' running at $bootstrap"
fi

step "preparing pyfluss, the independent reader (venv in .cache/venv)"
python=$(scripts/pyfluss-venv.sh)
echo "$python"

step "creating the tables of configs/gateway.yaml (scripts/demo/tables.yaml)"
"$bin/fluss-admin" create-tables -bootstrap "$bootstrap" -file scripts/demo/tables.yaml

step "configuring the gateway: configs/gateway.yaml with the cluster's address and loopback ports"
config=$work/gateway.yaml
sed -e "s|^  bootstrap: \[127.0.0.1:9123\]|  bootstrap: [$bootstrap]|" \
	-e "s|^    bind: 0.0.0.0:9092 |    bind: 127.0.0.1:$kafka_port |" \
	-e "s|^    advertised: localhost:9092 |    advertised: 127.0.0.1:$kafka_port |" \
	-e "s|^  address: :9464$|  address: 127.0.0.1:$admin_port|" \
	configs/gateway.yaml >"$config"
for want in "bootstrap: \[$bootstrap\]" "bind: 127.0.0.1:$kafka_port" "advertised: 127.0.0.1:$kafka_port" "address: 127.0.0.1:$admin_port"; do
	grep -q "$want" "$config" || die "configs/gateway.yaml changed shape: could not set '$want' (see $config)"
done
diff -u configs/gateway.yaml "$config" | grep '^[-+] ' || true
"$bin/gateway" validate -config "$config"

step "starting the gateway"
# In its own session, so that a terminal's Ctrl-C reaches only this script, which then sends
# the gateway one SIGTERM (a second signal would make it exit at once).
setsid "$bin/gateway" -config "$config" >"$work/gateway.log" 2>&1 &
gateway_pid=$!
ready=0
for _ in $(seq 1 600); do
	if curl -fsS "http://127.0.0.1:$admin_port/readyz" >/dev/null 2>&1; then
		ready=1
		break
	fi
	kill -0 "$gateway_pid" 2>/dev/null || break
	sleep 0.1
done
if ((!ready)); then
	cat "$work/gateway.log" >&2
	die "the gateway did not become ready"
fi
echo "gateway ready: Kafka on 127.0.0.1:$kafka_port, metrics on http://127.0.0.1:$admin_port/metrics (pid $gateway_pid)"

step "producing with a Kafka client (franz-go, idempotent, acks=all)"
"$bin/demo-producer" -brokers "127.0.0.1:$kafka_port" -orders "$orders" -customers "$customers" -deletes "$deletes"

step "reading the rows back out of Fluss (pyfluss)"
"$python" tools/pyfluss/demo_show.py tools/pyfluss/flusspy.py "$bootstrap" "$customers" "$deletes"

step "metric highlights (http://127.0.0.1:$admin_port/metrics)"
curl -fsS "http://127.0.0.1:$admin_port/metrics" |
	grep -E '^fluss_gateway_(routes|route_records_total|route_dead_letter_records_total|route_rejected_records_total|kafka_produce_records_total|kafka_open_connections|sender_records_total|sender_batches_total|sender_retries_total|sender_inflight_requests|accumulator_buffer_bytes)[{ ]' ||
	true

if [[ $wait_for_ctrl_c == 1 ]]; then
	step "the gateway keeps running: produce more, e.g."
	echo "  echo '{\"order_id\": 1, \"customer\": {\"name\": \"you\"}, \"amount\": 9.99}' | kcat -P -b 127.0.0.1:$kafka_port -t orders"
	echo "  log: $work/gateway.log"
	if ((started_cluster)); then
		echo "Press Ctrl-C to stop the gateway and the Fluss cluster."
	else
		echo "Press Ctrl-C to stop the gateway."
	fi
	waiting=1
	wait "$gateway_pid" || true
	gateway_pid=
	tail -n 20 "$work/gateway.log" >&2
	die "the gateway exited by itself"
fi
