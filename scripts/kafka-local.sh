#!/usr/bin/env bash
# kafka-local.sh: a real single-node Apache Kafka broker (KRaft, broker and controller in one JVM)
# on 127.0.0.1 from the Maven Central jars, as the baseline of tools/gateway-bench.
#
# The broker (org.apache.kafka:kafka_2.13) and kafka-tools (ProducerPerformance) are resolved once
# with Maven, from a generated pom, into .cache/kafka/VERSION/lib. An instance runs in a fresh
# temporary directory (server.properties, KRaft log dir, broker.log) with free ports; its state
# (pid, ports, directory) is kept in .cache/kafka/instances/NAME.state so that `stop` ends exactly
# that process. Only `start`, `bootstrap` and `fetch` write their answer to stdout; progress and
# errors go to stderr.
set -euo pipefail

readonly DEFAULT_VERSION=4.1.2
readonly LOG4J_VERSION=2.24.3
readonly KAFKA_MAIN=kafka.Kafka
readonly STORAGE_TOOL=kafka.tools.StorageTool

readonly LS_NAME=kafka-local LS_KIND=broker
# shellcheck source=scripts/lib/local-service.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local-service.sh"
CACHE_DIR=${KAFKA_LOCAL_CACHE:-$REPO_ROOT/.cache/kafka}
STATE_DIR=${KAFKA_LOCAL_STATE_DIR:-$CACHE_DIR/instances}
LS_LOGS=log
START_TIMEOUT=${KAFKA_LOCAL_START_TIMEOUT:-120} # seconds until the broker has started
STOP_TIMEOUT=${KAFKA_LOCAL_STOP_TIMEOUT:-30}    # seconds before SIGKILL
HEAP=${KAFKA_LOCAL_HEAP:-1g}

usage() {
	cat >&2 <<'EOF'
usage: scripts/kafka-local.sh COMMAND [options]

commands:
  start [-s NAME] [-v VERSION] [-p PARTITIONS] [-o OWNER_PID]
        resolve kafka_2.13 and kafka-tools VERSION (default 4.1.2) into .cache/kafka once, format
        a KRaft log dir and start one broker+controller JVM on free 127.0.0.1 ports, wait until
        it has started and accepts connections, print KAFKA_BOOTSTRAP=127.0.0.1:PORT and
        KAFKA_PID=PID. -p sets num.partitions (default 4). -o stops the broker by itself once
        process OWNER_PID has exited.
  stop [-s NAME]        stop the broker (TERM, KILL after a timeout) and remove its directory
  status [-s NAME]      say what runs (exit 0 up, 1 down, 3 no such broker)
  bootstrap [-s NAME]   print KAFKA_BOOTSTRAP=... and KAFKA_PID=... of a running broker
  logs [-s NAME] [-l LINES]  tail the broker's log
  list                  names of brokers with a state file
  fetch [-v VERSION]    only resolve the jars, print the lib directory (the broker's and
                        ProducerPerformance's classpath is LIB/*)

environment: KAFKA_LOCAL_NAME (default name, else "default"), KAFKA_VERSION, JAVA_HOME (a Java 17+
  is looked for otherwise), KAFKA_LOCAL_CACHE, KAFKA_LOCAL_STATE_DIR, KAFKA_LOCAL_START_TIMEOUT (120),
  KAFKA_LOCAL_STOP_TIMEOUT (30), KAFKA_LOCAL_HEAP (1g).
EOF
}

# ---------------------------------------------------------------------------- prerequisites

# find_java: prints a Java 17+ (Kafka 4's minimum for the broker), JAVA_HOME first, 17 preferred.
find_java() {
	local c major
	local candidates=()
	[[ -n ${JAVA_HOME:-} ]] && candidates+=("$JAVA_HOME/bin/java")
	c=$(command -v java || true)
	[[ -n $c ]] && candidates+=("$c")
	for c in /usr/lib/jvm/*/bin/java; do
		[[ -x $c ]] && candidates+=("$c")
	done
	for c in "${candidates[@]}"; do
		[[ -x $c ]] || continue
		major=$(java_major "$c") || continue
		if ((major >= 17)); then
			printf '%s\n' "$c"
			return 0
		fi
	done
	die "Kafka 4 needs Java 17+ and none was found (JAVA_HOME, PATH, /usr/lib/jvm); install it: apt-get install openjdk-17-jdk-headless"
}

# fetch_jars VERSION -> prints the lib directory with the broker's and kafka-tools' runtime jars.
fetch_jars() {
	local version=$1
	[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "-v wants a version like 4.1.2, got '$version'"
	local lib="$CACHE_DIR/$version/lib"
	if [[ -f $lib/kafka_2.13-$version.jar && -f $lib/kafka-tools-$version.jar ]]; then
		printf '%s\n' "$lib"
		return 0
	fi
	need_maven "Kafka $version"
	local tmp
	tmp=$(staging_dir "$lib")
	# Kafka 4 logs through slf4j 1.7 to log4j 2; the binding is not a dependency of the jars.
	cat >"$tmp/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.kafka-local</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
EOF
	log "resolving org.apache.kafka:kafka_2.13:$version and kafka-tools:$version with Maven"
	if ! mvn -B -q -f "$tmp/pom.xml" "$MDP:copy-dependencies" -DincludeScope=runtime \
		-DoutputDirectory="$tmp/jars" >"$tmp/mvn.log" 2>&1; then
		cat "$tmp/mvn.log" >&2
		rm -rf "$tmp"
		die "could not resolve Kafka $version from Maven Central (is version $version published?)"
	fi
	publish "$tmp/jars" "$lib" || log "another command resolved $version first; using its jars"
	rm -rf "$tmp"
	[[ -f $lib/kafka_2.13-$version.jar ]] || die "resolving Kafka $version left no broker jar in $lib"
	printf '%s\n' "$lib"
}

# ---------------------------------------------------------------------------- processes

# random_cluster_id: 16 random bytes, URL-safe base64 without padding (Kafka's Uuid form).
random_cluster_id() {
	head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'
}

write_config() { # write_config DIR PORT CONTROLLER_PORT PARTITIONS
	local dir=$1 port=$2 cport=$3 partitions=$4
	cat >"$dir/conf/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=$partitions
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
EOF
	cat >"$dir/conf/log4j2.properties" <<'EOF'
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.state.name = state.change.logger
logger.state.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
EOF
}

# start_broker: uses ST; formats the log dir and starts the JVM on fresh ports (3 tries on a
# port clash); sets ST[PID] ST[PORT] ST[CONTROLLER_PORT].
start_broker() {
	local dir=${ST[DIR]} attempt port cport pid logfile=${ST[DIR]}/log/broker.log
	for attempt in 1 2 3; do
		pick_port
		port=$PORT
		pick_port
		cport=$PORT
		[[ $port != "$cport" ]] || continue
		rm -rf "$dir/data"
		write_config "$dir" "$port" "$cport" "${ST[PARTITIONS]}"
		"${ST[JAVA]}" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
			"-Dlog4j2.configurationFile=file:$dir/conf/log4j2.properties" -cp "${ST[LIB]}/*" \
			"$STORAGE_TOOL" format "--cluster-id=${ST[CLUSTER_ID]}" "--config=$dir/conf/server.properties" \
			>>"$dir/log/format.log" 2>&1 || {
			tail -n 20 "$dir/log/format.log" >&2 || true
			fail_start "formatting the KRaft log dir failed"
		}
		pid=$(launch "$logfile" "${ST[JAVA]}" "-Xms$HEAP" "-Xmx$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
			-Djava.awt.headless=true "-Dlog4j2.configurationFile=file:$dir/conf/log4j2.properties" \
			-cp "${ST[LIB]}/*" "$KAFKA_MAIN" "$dir/conf/server.properties")
		ST[PID]=$pid ST[PORT]=$port ST[CONTROLLER_PORT]=$cport
		save_state
		if wait_started "$pid" "$port" "$logfile"; then
			return 0
		fi
		grep -q 'Address already in use' "$logfile" || fail_start "the broker did not start"
		log "port clash (attempt $attempt); retrying on other ports"
		terminate_marked broker "$dir" "$pid"
	done
	fail_start "no free ports after 3 attempts"
}

# wait_started PID PORT LOG: wait until the broker logged that it started and PORT accepts
# connections; 1 if the process died.
wait_started() {
	wait_for "$1" "$3" "the broker exited before it started" "the broker did not start within ${START_TIMEOUT}s" 0.2 \
		broker_started "$3" "$2"
}

# broker_started LOG PORT: the broker has logged that it started and accepts connections.
broker_started() { grep -q 'Kafka Server started' "$1" 2>/dev/null && port_in_use "$2"; }

stop_instance() {
	stop_watcher
	terminate_marked broker "${ST[DIR]}" "${ST[PID]:-}"
}

alive() { owns "${ST[PID]:-}" "${ST[DIR]:-/nonexistent}"; }

address() { printf 'KAFKA_BOOTSTRAP=%s\n' "${ST[BOOTSTRAP]:-?}"; }

describe() { printf 'Kafka %s KRaft\n' "${ST[VERSION]}"; }

# ---------------------------------------------------------------------------- commands

cmd_start() {
	local name=$1 version=$2 partitions=$3 owner=$4
	[[ $partitions =~ ^[1-9][0-9]*$ ]] || die "-p wants a positive number of partitions, got '$partitions'"
	claim "$name" "$owner"
	local t0 java lib dir
	t0=$(now_ms)
	java=$(find_java)
	lib=$(fetch_jars "$version")
	dir=$(mktemp -d "${TMPDIR:-/tmp}/kafka-local-$name.XXXXXX")
	mkdir -p "$dir/conf" "$dir/log"
	ST=([NAME]=$name [DIR]=$dir [VERSION]=$version [LIB]=$lib [JAVA]=$java [STARTED]=$(date +%s)
		[PARTITIONS]=$partitions [CLUSTER_ID]=$(random_cluster_id))
	begin_start "$owner" "$dir/log/watcher.log"
	log "starting broker '$name' (Kafka $version KRaft, Java $(java_major "$java"), heap $HEAP) in $dir"
	start_broker
	ST[BOOTSTRAP]=127.0.0.1:${ST[PORT]}
	end_start
	log "broker '$name' ready in $(($(now_ms) - t0))ms: ${ST[BOOTSTRAP]} (controller :${ST[CONTROLLER_PORT]}, pid ${ST[PID]})"
	print_bootstrap
}

print_bootstrap() {
	printf 'KAFKA_BOOTSTRAP=%s\nKAFKA_PID=%s\n' "${ST[BOOTSTRAP]}" "${ST[PID]}"
}

cmd_status() {
	status_head "$1" || return 3
	echo "  KAFKA_BOOTSTRAP=${ST[BOOTSTRAP]:-?}"
	status_owner
	status_line broker "${ST[PID]:-}" "${ST[PORT]:-} (controller :${ST[CONTROLLER_PORT]:-})" "${ST[PORT]:-}"
}

cmd_bootstrap() {
	load_running "$1"
	print_bootstrap
}

cmd_logs() {
	load_instance "$1"
	tail_logs "" "$2" "${ST[DIR]}/log/broker.log"
}

# parse_option: kafka-local.sh's own option (the library's parse_args takes the common ones).
ARG[PARTITIONS]=4
parse_option() {
	case $1 in
	-p | --partitions)
		ARG[PARTITIONS]=${2:?-p wants a number}
		SHIFT=2
		;;
	esac
}

main() {
	ARG[NAME]=${KAFKA_LOCAL_NAME:-default} ARG[VERSION]=${KAFKA_VERSION:-$DEFAULT_VERSION}
	parse_args "$@"
	case ${ARG[CMD]} in
	start) cmd_start "${ARG[NAME]}" "${ARG[VERSION]}" "${ARG[PARTITIONS]}" "${ARG[OWNER]}" ;;
	bootstrap) cmd_bootstrap "${ARG[NAME]}" ;;
	logs) cmd_logs "${ARG[NAME]}" "${ARG[LINES]}" ;;
	fetch) fetch_jars "${ARG[VERSION]}" ;;
	*) common_command ;;
	esac
}

main "$@"
