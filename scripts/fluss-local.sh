#!/usr/bin/env bash
# fluss-local.sh: a real Apache Fluss cluster on 127.0.0.1 from the Maven Central jars.
#
# ZooKeeper (the shaded one inside fluss-server), one coordinator and N tablet servers run as
# separate JVMs in a fresh temporary directory with free ports. State (pids, ports, directory) is
# kept in a state file per cluster name so that `stop` ends exactly those processes.
# Only `start` and `bootstrap` write to stdout (the FLUSS_BOOTSTRAP line, and FLUSS_SASL_BOOTSTRAP
# for a cluster started with --sasl); everything else that is not the answer to a query goes to
# stderr.
#
# --sasl adds a second listener named SASL (security protocol sasl, mechanism PLAIN, the given
# users) to the coordinator and every tablet server. The FLUSS listener stays plaintext and is the
# internal listener (internal.listener.name) that the servers use among themselves.
#
# --client-ports adds a plaintext listener named CLIENT whose tablet server addresses are the given
# ports, not the servers' own: tablet server i advertises 127.0.0.1:P_i, where something between
# (a test's TCP proxy) forwards to the port `client-port i` prints. A client bootstrapped on
# FLUSS_CLIENT_BOOTSTRAP reaches the tablet servers only through that proxy, while the servers keep
# talking among themselves on FLUSS: the proxy can cut one client off one server (a network
# partition) without the cluster noticing.
set -euo pipefail

readonly DEFAULT_VERSION=0.9.1-incubating
readonly LOG4J_VERSION=2.17.1
readonly ZK_MAIN=org.apache.fluss.shaded.zookeeper3.org.apache.zookeeper.server.quorum.QuorumPeerMain
readonly ZK_CLI=org.apache.fluss.shaded.zookeeper3.org.apache.zookeeper.ZooKeeperMain
readonly COORDINATOR_MAIN=org.apache.fluss.server.coordinator.CoordinatorServer
readonly TABLET_MAIN=org.apache.fluss.server.tablet.TabletServer
readonly PLAIN_LOGIN_MODULE=org.apache.fluss.security.auth.sasl.plain.PlainLoginModule

readonly LS_NAME=fluss-local LS_KIND=cluster
# shellcheck source=scripts/lib/local-service.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local-service.sh"
CACHE_DIR=${FLUSS_LOCAL_CACHE:-$REPO_ROOT/.cache/fluss}
STATE_DIR=${FLUSS_LOCAL_STATE_DIR:-$CACHE_DIR/clusters}
LS_LOGS=log
START_TIMEOUT=${FLUSS_LOCAL_START_TIMEOUT:-180} # seconds, per phase
STOP_TIMEOUT=${FLUSS_LOCAL_STOP_TIMEOUT:-30}    # seconds before SIGKILL
ZK_HEAP=${FLUSS_LOCAL_ZK_HEAP:-256m}
COORDINATOR_HEAP=${FLUSS_LOCAL_COORDINATOR_HEAP:-512m}
TABLET_HEAP=${FLUSS_LOCAL_TABLET_HEAP:-1g}

usage() {
	cat >&2 <<'EOF'
usage: scripts/fluss-local.sh COMMAND [options]

commands:
  start [-n TABLET_SERVERS] [-v VERSION] [-s NAME] [-D key=value]... [-o OWNER_PID]
        [--sasl USER:PASSWORD[,USER:PASSWORD]...] [--client-ports P0[,P1]...]
        download fluss-server VERSION (default 0.9.1-incubating) and log4j into .cache/fluss,
        start ZooKeeper, a coordinator and N tablet servers (default 1) on 127.0.0.1, wait
        until the coordinator knows every tablet server, print FLUSS_BOOTSTRAP=127.0.0.1:PORT.
        -D adds a line "key: value" to every server's server.yaml.
        -o stops the cluster by itself once process OWNER_PID has exited.
        --sasl also opens a SASL/PLAIN listener on every server that accepts exactly these
        users (names [A-Za-z0-9_-], passwords [A-Za-z0-9_.@%+-]) and prints a second line
        FLUSS_SASL_BOOTSTRAP=127.0.0.1:PORT; the FLUSS listener stays plaintext.
        --client-ports (one port per tablet server) also opens a plaintext CLIENT listener
        on every server; tablet server i advertises it as 127.0.0.1:P_i (a proxy's port,
        forwarding to `client-port i`); prints FLUSS_CLIENT_BOOTSTRAP=127.0.0.1:PORT.
  stop [-s NAME]                 stop the cluster's processes (TERM, KILL after a timeout), remove its dir
  status [-s NAME]               say what runs (exit 0 all up, 1 something down, 3 no such cluster)
  bootstrap [-s NAME]            print FLUSS_BOOTSTRAP=... (and FLUSS_SASL_BOOTSTRAP=...,
                                 FLUSS_CLIENT_BOOTSTRAP=...) of a running cluster
  client-port [-s NAME] ID       the port tablet server ID's CLIENT listener is bound to (a cluster
                                 started with --client-ports; it changes when the server restarts)
  restart-tablet [-s NAME] ID    stop and start tablet server ID (same id, same data dir)
  stop-tablet [-s NAME] ID       stop tablet server ID (TERM, KILL after a timeout)
  start-tablet [-s NAME] ID      start a stopped tablet server ID again and wait for the coordinator
  signal-tablet [-s NAME] ID SIG send SIG to tablet server ID: KILL (a crash; returns once it has
                                 exited; start-tablet brings it back), TERM (a graceful stop, KILL
                                 after the stop timeout), STOP (a long pause), CONT
  signal-coordinator [-s NAME] SIG
                                 the same for the coordinator (start-coordinator brings it back)
  start-coordinator [-s NAME]    start a stopped or crashed coordinator again on its port and wait
                                 until it runs its event thread
  logs [-s NAME] [-f] [-l LINES] [COMPONENT]
                                 tail the logs (COMPONENT: zookeeper, coordinator, tablet-ID; default all)
  list                           names of clusters with a state file
  fetch [-v VERSION]             only download the jars, print the lib directory
  fetch-client -v VERSION        only download the self-contained fluss-client VERSION jar (which
                                 the Java oracle tests run; no cluster uses it) into
                                 .cache/fluss/VERSION/client, print the jar's path

environment: FLUSS_LOCAL_CLUSTER (default name, else "default"), FLUSS_VERSION (default version),
  FLUSS_LOCAL_STATE_DIR, FLUSS_LOCAL_CACHE, FLUSS_LOCAL_START_TIMEOUT, FLUSS_LOCAL_STOP_TIMEOUT,
  FLUSS_LOCAL_{ZK,COORDINATOR,TABLET}_HEAP, JAVA_HOME (a JDK 17 is looked for otherwise).
EOF
}

# ---------------------------------------------------------------------------- prerequisites

find_java() {
	local c major
	local candidates=()
	[[ -n ${JAVA_HOME:-} ]] && candidates+=("$JAVA_HOME/bin/java")
	for c in /usr/lib/jvm/java-17-openjdk-*/bin/java /usr/lib/jvm/temurin-17-*/bin/java /usr/lib/jvm/*17*/bin/java; do
		[[ -x $c ]] && candidates+=("$c")
	done
	c=$(command -v java || true)
	[[ -n $c ]] && candidates+=("$c")
	for c in "${candidates[@]}"; do
		[[ -x $c ]] || continue
		major=$(java_major "$c") || continue
		if [[ $major == 17 ]]; then
			printf '%s\n' "$c"
			return 0
		fi
	done
	for c in "${candidates[@]}"; do
		[[ -x $c ]] || continue
		major=$(java_major "$c") || continue
		if [[ $major =~ ^[0-9]+$ ]] && ((major > 17)); then
			log "warning: no JDK 17 found, using Java $major at $c (untested with Fluss)"
			printf '%s\n' "$c"
			return 0
		fi
	done
	die "a JDK 17 is required and none was found (JAVA_HOME, /usr/lib/jvm, PATH); install it: apt-get install openjdk-17-jdk-headless"
}

# fetch_jars VERSION -> prints the lib directory holding fluss-server and log4j jars
fetch_jars() {
	local version=$1
	local lib="$CACHE_DIR/$version/lib"
	if [[ -f $lib/fluss-server-$version.jar ]]; then
		link_default_lib "$version"
		printf '%s\n' "$lib"
		return 0
	fi
	need_maven "fluss-server $version"
	local tmp
	tmp=$(staging_dir "$lib")
	local artifacts=(
		"org.apache.fluss:fluss-server:$version"
		"org.apache.logging.log4j:log4j-api:$LOG4J_VERSION"
		"org.apache.logging.log4j:log4j-core:$LOG4J_VERSION"
		"org.apache.logging.log4j:log4j-slf4j-impl:$LOG4J_VERSION"
	)
	local a
	for a in "${artifacts[@]}"; do
		log "downloading $a"
		if ! maven_copy "$a" "$tmp"; then
			rm -rf "$tmp"
			die "could not download $a from Maven Central (is version $version published?)"
		fi
	done
	publish "$tmp" "$lib" || true # another start was first: use its copy
	[[ -f $lib/fluss-server-$version.jar ]] || die "download of fluss-server $version left no jar in $lib"
	link_default_lib "$version"
	printf '%s\n' "$lib"
}

# fetch_client_jar VERSION -> prints the path of fluss-client-VERSION.jar. The client jar shades
# its dependencies (fluss-common, Arrow, Netty), so it alone is a classpath for Fluss's Java classes
# (the 1.0.0 release has no server jar on Maven Central).
fetch_client_jar() {
	local version=$1
	[[ $version =~ ^[A-Za-z0-9._-]+$ ]] || die "fetch-client wants a version like 1.0.0, got '$version'"
	local dir="$CACHE_DIR/$version/client"
	local jar="$dir/fluss-client-$version.jar"
	if [[ -f $jar ]]; then
		printf '%s
' "$jar"
		return 0
	fi
	need_maven "fluss-client $version"
	local tmp
	tmp=$(staging_dir "$dir")
	log "downloading org.apache.fluss:fluss-client:$version"
	if ! maven_copy "org.apache.fluss:fluss-client:$version" "$tmp"; then
		rm -rf "$tmp"
		die "could not download org.apache.fluss:fluss-client:$version from Maven Central (is version $version published?)"
	fi
	publish "$tmp" "$dir" || true # another fetch was first: use its copy
	[[ -f $jar ]] || die "download of fluss-client $version left no jar in $dir"
	printf '%s
' "$jar"
}

# .cache/fluss/lib points at the default version's jars, for tools that want "the" server jar.
link_default_lib() {
	[[ $1 == "$DEFAULT_VERSION" && ! -e $CACHE_DIR/lib ]] || return 0
	ln -sfn "$DEFAULT_VERSION/lib" "$CACHE_DIR/lib" 2>/dev/null || true
}

# ---------------------------------------------------------------------------- processes

java_flags() { # java_flags DIR
	printf '%s\n' \
		--add-opens=java.base/java.nio=ALL-UNNAMED \
		--add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
		--add-opens=java.base/java.lang=ALL-UNNAMED \
		--add-opens=java.base/java.util=ALL-UNNAMED \
		-Dio.netty.tryReflectionSetAccessible=true \
		"-Dlog4j.configurationFile=file:$1/conf/log4j2.properties"
}

start_zookeeper() { # uses ST; sets ZK_PORT ZK_PID
	local dir=${ST[DIR]} pid port attempt
	local -a flags
	mapfile -t flags < <(java_flags "$dir")
	for attempt in 1 2 3; do
		pick_port
		port=$PORT
		cat >"$dir/conf/zookeeper.properties" <<EOF
dataDir=$dir/zookeeper
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
EOF
		pid=$(launch "$dir/log/zookeeper.log" "${ST[JAVA]}" "-Xmx$ZK_HEAP" -XX:+UseSerialGC "${flags[@]}" \
			-cp "${ST[LIB]}/*" "$ZK_MAIN" "$dir/conf/zookeeper.properties")
		ST[ZK_PID]=$pid
		ST[ZK_PORT]=$port
		save_state
		if wait_port "zookeeper" "$pid" "$port" "$dir/log/zookeeper.log"; then
			return 0
		fi
		grep -q 'Address already in use' "$dir/log/zookeeper.log" || fail_start "zookeeper did not start"
		log "port $port taken, retrying ($attempt)"
	done
	fail_start "zookeeper could not bind a port"
}

# sasl_enabled: true if the loaded cluster has a SASL listener.
sasl_enabled() { [[ -n ${ST[SASL_USERS]:-} ]]; }

# client_enabled: true if the loaded cluster has a CLIENT listener (--client-ports).
client_enabled() { [[ -n ${ST[CLIENT_PORTS]:-} ]]; }

# listeners PORT SASL_PORT CLIENT_PORT: the bind.listeners value of a server.
listeners() {
	local out="FLUSS://127.0.0.1:$1"
	if sasl_enabled; then
		out+=",SASL://127.0.0.1:$2"
	fi
	if client_enabled; then
		out+=",CLIENT://127.0.0.1:$3"
	fi
	printf '%s\n' "$out"
}

# advertised_client ID: tablet server ID's advertised.listeners, its CLIENT listener at the port
# --client-ports gave it.
advertised_client() {
	local -a ports
	IFS=, read -r -a ports <<<"${ST[CLIENT_PORTS]}"
	printf 'CLIENT://127.0.0.1:%s\n' "${ports[$1]}"
}

# sasl_conf: server.yaml lines of the SASL listener (the JAAS line holds spaces, so no -D).
sasl_conf() {
	local jaas="$PLAIN_LOGIN_MODULE required" pair
	local -a pairs
	IFS=, read -r -a pairs <<<"${ST[SASL_USERS]}"
	for pair in "${pairs[@]}"; do
		jaas+=" user_${pair%%:*}=\"${pair#*:}\""
	done
	cat <<EOF
internal.listener.name: FLUSS
security.protocol.map: SASL:sasl
security.sasl.enabled.mechanisms: PLAIN
security.sasl.plain.jaas.config: $jaas;
EOF
}

write_server_conf() { # uses ST
	local dir=${ST[DIR]} extra
	{
		cat <<EOF
zookeeper.address: 127.0.0.1:${ST[ZK_PORT]}
zookeeper.path.root: /fluss
bind.listeners: $(listeners "${ST[COORDINATOR_PORT]}" "${ST[COORDINATOR_SASL_PORT]:-}" "${ST[COORDINATOR_CLIENT_PORT]:-}")
remote.data.dir: $dir/remote
data.dir: $dir/data-0
tablet-server.id: 0
default.bucket.number: 1
default.replication.factor: 1
netty.server.num-network-threads: 1
netty.server.num-worker-threads: 3
server.buffer.memory-size: 64mb
EOF
		if sasl_enabled; then
			sasl_conf
		fi
		if [[ -n ${ST[EXTRA_CONF]:-} ]]; then
			# EXTRA_CONF holds key=value pairs separated by ASCII unit separators (no spaces in state).
			local IFS=$'\x1f'
			for extra in ${ST[EXTRA_CONF]}; do
				printf '%s: %s\n' "${extra%%=*}" "${extra#*=}"
			done
		fi
	} >"$dir/conf/server.yaml"
	cat >"$dir/conf/log4j2.properties" <<'EOF'
rootLogger.level=INFO
rootLogger.appenderRef.c.ref=C
appender.c.name=C
appender.c.type=Console
appender.c.layout.type=PatternLayout
appender.c.layout.pattern=%d %-5p %c{1} - %m%n
EOF
}

start_coordinator() {
	local dir=${ST[DIR]} pid attempt
	local -a flags
	mapfile -t flags < <(java_flags "$dir")
	for attempt in 1 2 3; do
		pick_port
		ST[COORDINATOR_PORT]=$PORT
		if sasl_enabled; then
			pick_port
			while [[ $PORT == "${ST[COORDINATOR_PORT]}" ]]; do pick_port; done
			ST[COORDINATOR_SASL_PORT]=$PORT
		fi
		if client_enabled; then
			pick_port
			while [[ $PORT == "${ST[COORDINATOR_PORT]}" || $PORT == "${ST[COORDINATOR_SASL_PORT]:-}" ]]; do pick_port; done
			ST[COORDINATOR_CLIENT_PORT]=$PORT
		fi
		write_server_conf
		pid=$(launch "$dir/log/coordinator.log" "${ST[JAVA]}" "-Xmx$COORDINATOR_HEAP" "${flags[@]}" \
			-cp "${ST[LIB]}/*" "$COORDINATOR_MAIN" --configDir "$dir/conf")
		ST[COORDINATOR_PID]=$pid
		save_state
		if wait_port "coordinator" "$pid" "${ST[COORDINATOR_PORT]}" "$dir/log/coordinator.log" &&
			{ ! sasl_enabled || wait_port "coordinator" "$pid" "${ST[COORDINATOR_SASL_PORT]}" "$dir/log/coordinator.log"; } &&
			{ ! client_enabled || wait_port "coordinator" "$pid" "${ST[COORDINATOR_CLIENT_PORT]}" "$dir/log/coordinator.log"; }; then
			# Tablet servers must register after the coordinator watches /tabletservers, so that
			# the coordinator logs each one (that log line is our readiness signal).
			wait_log "coordinator" "$pid" "$dir/log/coordinator.log" 'CoordinatorEventThread - Starting' 1
			return 0
		fi
		grep -q 'Address already in use' "$dir/log/coordinator.log" || fail_start "coordinator did not start"
		log "port ${ST[COORDINATOR_PORT]}${ST[COORDINATOR_SASL_PORT]:+ or ${ST[COORDINATOR_SASL_PORT]}} taken, retrying ($attempt)"
		: >"$dir/log/coordinator.log"
	done
	fail_start "coordinator could not bind a port"
}

tablet_known_count() { # tablet_known_count ID: how often the coordinator has accepted tablet server ID
	grep -c "New tablet server callback for tablet server $1\$" "${ST[DIR]}/log/coordinator.log" || true
}

launch_tablet() { # launch_tablet ID
	local id=$1 dir=${ST[DIR]} pid
	local -a flags args=("-Dbind.listeners=$(listeners 0 0 0)" "-Dtablet-server.id=$id" "-Ddata.dir=$dir/data-$id")
	mapfile -t flags < <(java_flags "$dir")
	if client_enabled; then
		args+=("-Dadvertised.listeners=$(advertised_client "$id")")
	fi
	pid=$(launch "$dir/log/tablet-$id.log" "${ST[JAVA]}" "-Xmx$TABLET_HEAP" -XX:+UseG1GC "${flags[@]}" \
		-cp "${ST[LIB]}/*" "$TABLET_MAIN" --configDir "$dir/conf" "${args[@]}")
	ST[TABLET_${id}_PID]=$pid
	ST[TABLET_${id}_PORT]=
	if sasl_enabled; then
		ST[TABLET_${id}_SASL_PORT]=
	fi
	if client_enabled; then
		ST[TABLET_${id}_CLIENT_PORT]=
	fi
	save_state
}

# wait_tablet ID BASELINE: wait until the coordinator has logged tablet server ID more than BASELINE times.
wait_tablet() {
	local id=$1 baseline=$2 dir=${ST[DIR]}
	local pid=${ST[TABLET_${id}_PID]}
	local deadline=$(($(date +%s) + START_TIMEOUT)) line
	while (($(tablet_known_count "$id") <= baseline)); do
		owns "$pid" "$dir" || {
			tail -n 40 "$dir/log/tablet-$id.log" >&2 || true
			return 1
		}
		owns "${ST[COORDINATOR_PID]}" "$dir" || {
			tail -n 40 "$dir/log/coordinator.log" >&2 || true
			return 1
		}
		(($(date +%s) < deadline)) || {
			log "tablet server $id not known to the coordinator after ${START_TIMEOUT}s"
			return 1
		}
		sleep 0.2
	done
	ST[TABLET_${id}_PORT]=$(listener_port "$dir/log/tablet-$id.log" FLUSS)
	if sasl_enabled; then
		ST[TABLET_${id}_SASL_PORT]=$(listener_port "$dir/log/tablet-$id.log" SASL)
	fi
	if client_enabled; then
		ST[TABLET_${id}_CLIENT_PORT]=$(listener_port "$dir/log/tablet-$id.log" CLIENT)
	fi
}

# listener_port LOG LISTENER: the port a server last logged for LISTENER (empty if none), from
# "Listening on endpoints [FLUSS://127.0.0.1:P1, SASL://127.0.0.1:P2]".
listener_port() {
	local line
	line=$(grep 'Listening on endpoints \[' "$1" | tail -n 1) || true
	line=$(grep -o "\b$2://127\.0\.0\.1:[0-9]*" <<<"$line") || true
	printf '%s\n' "${line##*:}"
}

# wait_port WHAT PID PORT LOG: wait until PORT accepts connections; 1 if the process died.
wait_port() {
	wait_for "$2" "$4" "$1 exited before listening on $3" "$1 not listening on $3 after ${START_TIMEOUT}s" 0.1 port_in_use "$3"
}

# wait_log WHAT PID LOG PATTERN COUNT: wait until PATTERN occurs COUNT times in LOG.
wait_log() {
	local what=$1 pid=$2 logfile=$3 pattern=$4 count=$5
	local deadline=$(($(date +%s) + START_TIMEOUT))
	until (($(grep -c -- "$pattern" "$logfile" || true) >= count)); do
		kill -0 "$pid" 2>/dev/null || {
			tail -n 30 "$logfile" >&2 || true
			fail_start "$what exited"
		}
		(($(date +%s) < deadline)) || fail_start "$what did not log '$pattern' within ${START_TIMEOUT}s"
		sleep 0.1
	done
}

# on_fail_start: fail_start's word before it stops the cluster.
on_fail_start() { log "stopping what was started"; }

# terminate WHAT PID...: TERM the pids that belong to the cluster, KILL what survives the timeout.
terminate() {
	local what=$1
	shift
	terminate_marked "$what" "${ST[DIR]}" "$@"
}

tablet_ids() { printf '%s\n' "${ST[TABLETS]:-}" | tr ',' '\n' | sed '/^$/d'; }

stop_instance() {
	local id pids=()
	stop_watcher
	for id in $(tablet_ids); do
		pids+=("${ST[TABLET_${id}_PID]:-}")
	done
	terminate "tablet servers" "${pids[@]}"
	terminate "coordinator" "${ST[COORDINATOR_PID]:-}"
	terminate "zookeeper" "${ST[ZK_PID]:-}"
	# A process launched just before this script was killed may be missing from the state file;
	# every JVM of the cluster names the cluster's unique directory on its command line.
	local strays=() p
	if [[ -n ${ST[DIR]:-} ]]; then
		for p in /proc/[0-9]*; do
			p=${p#/proc/}
			owns "$p" "${ST[DIR]}" && strays+=("$p")
		done
	fi
	if ((${#strays[@]} > 0)); then
		log "stopping processes missing from the state file: ${strays[*]}"
		terminate "unrecorded processes" "${strays[@]}"
	fi
}

# ---------------------------------------------------------------------------- commands

cmd_start() {
	local name=$1 version=$2 num_tablets=$3 owner=$4 extra=$5 sasl_users=$6 client_ports=$7
	[[ $num_tablets =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive number of tablet servers, got '$num_tablets'"
	if [[ -n $client_ports ]]; then
		local -a cps
		IFS=, read -r -a cps <<<"$client_ports"
		((${#cps[@]} == num_tablets)) || die "--client-ports wants one port per tablet server ($num_tablets), got '$client_ports'"
	fi
	claim "$name" "$owner"
	local t0 java lib dir
	t0=$(now_ms)
	java=$(find_java)
	lib=$(fetch_jars "$version")
	dir=$(mktemp -d "${TMPDIR:-/tmp}/fluss-local-$name.XXXXXX")
	mkdir -p "$dir/conf" "$dir/log" "$dir/remote" "$dir/zookeeper"
	ST=([NAME]=$name [DIR]=$dir [VERSION]=$version [LIB]=$lib [JAVA]=$java [STARTED]=$(date +%s) [EXTRA_CONF]=$extra)
	if [[ -n $sasl_users ]]; then
		ST[SASL_USERS]=$sasl_users
	fi
	if [[ -n $client_ports ]]; then
		ST[CLIENT_PORTS]=$client_ports
	fi
	ST[TABLETS]=$(seq -s, 0 $((num_tablets - 1)))
	begin_start "$owner" "$dir/log/watcher.log"
	log "starting cluster '$name' (Fluss $version, $num_tablets tablet server(s)) in $dir"
	start_zookeeper
	save_state
	start_coordinator
	ST[BOOTSTRAP]=127.0.0.1:${ST[COORDINATOR_PORT]}
	if sasl_enabled; then
		ST[SASL_BOOTSTRAP]=127.0.0.1:${ST[COORDINATOR_SASL_PORT]}
	fi
	if client_enabled; then
		ST[CLIENT_BOOTSTRAP]=127.0.0.1:${ST[COORDINATOR_CLIENT_PORT]}
	fi
	save_state
	local id
	for id in $(tablet_ids); do
		launch_tablet "$id"
	done
	save_state
	for id in $(tablet_ids); do
		wait_tablet "$id" 0 || fail_start "tablet server $id did not register with the coordinator"
	done
	verify_zookeeper_lists_tablets || fail_start "ZooKeeper does not list every tablet server"
	end_start
	log "cluster '$name' ready in $(($(now_ms) - t0))ms: coordinator ${ST[BOOTSTRAP]}${ST[SASL_BOOTSTRAP]:+ (SASL ${ST[SASL_BOOTSTRAP]})}, zookeeper 127.0.0.1:${ST[ZK_PORT]}, tablet servers $(tablet_summary)"
	print_bootstrap
}

# print_bootstrap: the stdout answer of start and bootstrap.
print_bootstrap() {
	printf 'FLUSS_BOOTSTRAP=%s\n' "${ST[BOOTSTRAP]}"
	if [[ -n ${ST[SASL_BOOTSTRAP]:-} ]]; then
		printf 'FLUSS_SASL_BOOTSTRAP=%s\n' "${ST[SASL_BOOTSTRAP]}"
	fi
	if [[ -n ${ST[CLIENT_BOOTSTRAP]:-} ]]; then
		printf 'FLUSS_CLIENT_BOOTSTRAP=%s\n' "${ST[CLIENT_BOOTSTRAP]}"
	fi
}

tablet_summary() {
	local id out=()
	for id in $(tablet_ids); do
		out+=("$id@127.0.0.1:${ST[TABLET_${id}_PORT]:-?}${ST[TABLET_${id}_SASL_PORT]:+ (SASL :${ST[TABLET_${id}_SASL_PORT]})}")
	done
	printf '%s\n' "${out[*]}"
}

# Independent check through ZooKeeper's own CLI: /fluss/tabletservers/ids lists every id.
verify_zookeeper_lists_tablets() {
	local out want got deadline=$(($(date +%s) + START_TIMEOUT))
	want="[$(tablet_ids | sort -n | paste -sd, | sed 's/,/, /g')]"
	# The listing is a JVM of its own: on a busy machine one run can fail to connect in time and
	# print nothing, so it is asked again until the start deadline.
	while :; do
		out=$("${ST[JAVA]}" -Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
			"-Dlog4j.configurationFile=file:${ST[DIR]}/conf/log4j2.properties" \
			-cp "${ST[LIB]}/*" "$ZK_CLI" -server "127.0.0.1:${ST[ZK_PORT]}" ls /fluss/tabletservers/ids 2>/dev/null |
			grep '^\[' | tail -n 1) || true
		got=$(printf '%s\n' "${out#\[}" | tr -d ']' | tr ',' '\n' | tr -d ' ' | sed '/^$/d' | sort -n | paste -sd, | sed 's/,/, /g')
		got="[$got]"
		[[ $got != "$want" ]] || return 0
		if (($(date +%s) >= deadline)); then
			log "zookeeper lists tablet servers $got, want $want"
			return 1
		fi
		log "zookeeper lists tablet servers $got, want $want: asking again"
		sleep 1
	done
}

# alive: true if any process of the loaded cluster still runs.
alive() {
	local id dir=${ST[DIR]:-/nonexistent}
	owns "${ST[ZK_PID]:-}" "$dir" && return 0
	owns "${ST[COORDINATOR_PID]:-}" "$dir" && return 0
	for id in $(tablet_ids); do
		owns "${ST[TABLET_${id}_PID]:-}" "$dir" && return 0
	done
	return 1
}

address() { printf 'FLUSS_BOOTSTRAP=%s\n' "${ST[BOOTSTRAP]:-?}"; }

describe() { printf 'Fluss %s\n' "${ST[VERSION]}"; }

cmd_status() {
	local name=$1 down=0 id
	status_head "$name" || return 3
	echo "  FLUSS_BOOTSTRAP=${ST[BOOTSTRAP]:-?}"
	if [[ -n ${ST[SASL_BOOTSTRAP]:-} ]]; then
		echo "  FLUSS_SASL_BOOTSTRAP=${ST[SASL_BOOTSTRAP]} (SASL/PLAIN users: $(sasl_user_names))"
	fi
	status_line zookeeper "${ST[ZK_PID]:-}" "${ST[ZK_PORT]:-}" || down=1
	status_line coordinator "${ST[COORDINATOR_PID]:-}" "${ST[COORDINATOR_PORT]:-}${ST[COORDINATOR_SASL_PORT]:+ (SASL :${ST[COORDINATOR_SASL_PORT]})}" || down=1
	for id in $(tablet_ids); do
		status_line "tablet-$id" "${ST[TABLET_${id}_PID]:-}" "${ST[TABLET_${id}_PORT]:-}${ST[TABLET_${id}_SASL_PORT]:+ (SASL :${ST[TABLET_${id}_SASL_PORT]})}" || down=1
	done
	status_owner
	return "$down"
}

sasl_user_names() {
	local pair out=()
	local -a pairs
	IFS=, read -r -a pairs <<<"${ST[SASL_USERS]:-}"
	for pair in "${pairs[@]}"; do out+=("${pair%%:*}"); done
	printf '%s\n' "${out[*]}"
}

cmd_bootstrap() {
	load_running "$1"
	print_bootstrap
}

cmd_client_port() {
	local name=$1 id=$2
	load_instance "$name"
	check_tablet_id "$id"
	client_enabled || die "cluster '$name' was started without --client-ports"
	[[ -n ${ST[TABLET_${id}_CLIENT_PORT]:-} ]] || die "tablet server $id of cluster '$name' has no CLIENT port yet (not started?)"
	printf '%s\n' "${ST[TABLET_${id}_CLIENT_PORT]}"
}

check_tablet_id() {
	local id=$1
	[[ $id =~ ^[0-9]+$ ]] || die "tablet server id must be a number, got '$id'"
	tablet_ids | grep -qx "$id" || die "cluster '${ST[NAME]}' has no tablet server $id (has $(tablet_ids | paste -sd' '))"
}

cmd_stop_tablet() {
	local name=$1 id=$2
	lock "$name"
	load_instance "$name"
	check_tablet_id "$id"
	terminate "tablet server $id" "${ST[TABLET_${id}_PID]:-}"
	log "tablet server $id of cluster '$name' stopped"
}

cmd_signal_tablet() {
	local name=$1 id=$2 sig=$3
	lock "$name"
	load_instance "$name"
	check_tablet_id "$id"
	send_signal "tablet server $id" "${ST[TABLET_${id}_PID]:-}" "$sig"
}

cmd_signal_coordinator() {
	local name=$1 sig=$2
	lock "$name"
	load_instance "$name"
	send_signal "coordinator" "${ST[COORDINATOR_PID]:-}" "$sig"
}

# send_signal WHAT PID SIG: KILL (returns once the process is gone), TERM (a graceful stop: returns once
# it is gone, KILL after the stop timeout), STOP or CONT to a process of the cluster.
send_signal() {
	local what=$1 pid=$2 sig=$3
	case $sig in
	KILL | STOP | CONT) ;;
	TERM)
		owns "$pid" "${ST[DIR]}" || die "$what of cluster '${ST[NAME]}' is not running"
		terminate "$what" "$pid"
		log "$what of cluster '${ST[NAME]}' stopped"
		return
		;;
	*) die "signals are KILL, TERM, STOP or CONT, got '$sig'" ;;
	esac
	owns "$pid" "${ST[DIR]}" || die "$what of cluster '${ST[NAME]}' is not running"
	kill "-$sig" "$pid"
	if [[ $sig == KILL ]]; then
		local deadline=$(($(date +%s) + STOP_TIMEOUT))
		while owns "$pid" "${ST[DIR]}"; do
			(($(date +%s) < deadline)) || die "$what (pid $pid) still runs after SIGKILL"
			sleep 0.05
		done
	fi
	log "$what of cluster '${ST[NAME]}' sent SIG$sig"
}

cmd_start_coordinator() {
	local name=$1
	lock "$name"
	load_instance "$name"
	owns "${ST[COORDINATOR_PID]:-}" "${ST[DIR]}" && die "the coordinator already runs (pid ${ST[COORDINATOR_PID]})"
	local dir=${ST[DIR]} logfile=${ST[DIR]}/log/coordinator.log t0 baseline pid
	local -a flags
	mapfile -t flags < <(java_flags "$dir")
	t0=$(now_ms)
	baseline=$(grep -c 'CoordinatorEventThread - Starting' "$logfile" || true)
	printf '\n===== restarted %s =====\n' "$(date '+%F %T.%N')" >>"$logfile"
	# The same server.yaml: the same port, which clients have as their bootstrap address.
	pid=$(launch "$logfile" "${ST[JAVA]}" "-Xmx$COORDINATOR_HEAP" "${flags[@]}" \
		-cp "${ST[LIB]}/*" "$COORDINATOR_MAIN" --configDir "$dir/conf")
	ST[COORDINATOR_PID]=$pid
	save_state
	# Not wait_log: its failure stops the whole cluster.
	local deadline=$(($(date +%s) + START_TIMEOUT))
	until (($(grep -c 'CoordinatorEventThread - Starting' "$logfile" || true) > baseline)) && port_in_use "${ST[COORDINATOR_PORT]}"; do
		owns "$pid" "$dir" || {
			tail -n 40 "$logfile" >&2 || true
			die "the coordinator exited; see scripts/fluss-local.sh logs -s $name coordinator"
		}
		(($(date +%s) < deadline)) || die "the coordinator did not run again within ${START_TIMEOUT}s"
		sleep 0.2
	done
	log "coordinator of cluster '$name' back in $(($(now_ms) - t0))ms at 127.0.0.1:${ST[COORDINATOR_PORT]}"
}

cmd_start_tablet() {
	local name=$1 id=$2
	lock "$name"
	load_instance "$name"
	check_tablet_id "$id"
	owns "${ST[TABLET_${id}_PID]:-}" "${ST[DIR]}" && die "tablet server $id already runs (pid ${ST[TABLET_${id}_PID]})"
	owns "${ST[COORDINATOR_PID]:-}" "${ST[DIR]}" || die "the coordinator of cluster '$name' is not running"
	local t0 baseline
	t0=$(now_ms)
	baseline=$(tablet_known_count "$id")
	local logfile="${ST[DIR]}/log/tablet-$id.log" deadline=$(($(date +%s) + START_TIMEOUT)) mark
	while :; do
		mark="===== restarted $(date '+%F %T.%N') ====="
		printf '\n%s\n' "$mark" >>"$logfile"
		launch_tablet "$id"
		save_state
		wait_tablet "$id" "$baseline" 2>/dev/null && break
		# After a crash (SIGKILL) ZooKeeper keeps the server's registration until the old session
		# times out (zookeeper.client.session-timeout); a server started meanwhile exits with
		# NodeExists. Start it again until the registration is gone.
		if owns "${ST[TABLET_${id}_PID]}" "${ST[DIR]}" ||
			! sed -n "/^$mark\$/,\$p" "$logfile" | grep -q "NodeExists for /fluss/tabletservers/ids/$id" ||
			(($(date +%s) >= deadline)); then
			tail -n 40 "$logfile" >&2 || true
			die "tablet server $id did not come back; see scripts/fluss-local.sh logs -s $name tablet-$id"
		fi
		sleep 1
	done
	save_state
	log "tablet server $id of cluster '$name' back in $(($(now_ms) - t0))ms at 127.0.0.1:${ST[TABLET_${id}_PORT]}"
}

cmd_logs() {
	local name=$1 follow=$2 lines=$3 component=$4
	load_instance "$name"
	local files=() f
	if [[ -z $component || $component == all ]]; then
		for f in "${ST[DIR]}"/log/*.log; do [[ -f $f ]] && files+=("$f"); done
	else
		f="${ST[DIR]}/log/$component.log"
		[[ -f $f ]] || die "no log $f (components: $(find "${ST[DIR]}/log" -name '*.log' -printf '%f\n' | sed 's/\.log$//' | sort | paste -sd' '))"
		files+=("$f")
	fi
	tail_logs "$follow" "$lines" "${files[@]}"
}

# parse_option: fluss-local.sh's own options (the library's parse_args takes the common ones).
ARG[TABLETS]=1 ARG[EXTRA]="" ARG[SASL]="" ARG[CLIENT_PORTS]="" ARG[FOLLOW]="" ARG_POSITIONAL=()
parse_option() {
	case $1 in
	-n | --tablet-servers)
		ARG[TABLETS]=${2:?-n wants a number}
		SHIFT=2
		;;
	-D)
		local kv=${2:?-D wants key=value}
		[[ $kv == *=* && $kv != *' '* ]] || die "-D wants key=value without spaces, got '$kv'"
		ARG[EXTRA]=${ARG[EXTRA]:+${ARG[EXTRA]}$'\x1f'}$kv
		SHIFT=2
		;;
	--sasl)
		ARG[SASL]=${2:?--sasl wants USER:PASSWORD[,USER:PASSWORD]...}
		[[ ${ARG[SASL]} =~ ^[A-Za-z0-9_-]+:[A-Za-z0-9_.@%+-]+(,[A-Za-z0-9_-]+:[A-Za-z0-9_.@%+-]+)*$ ]] ||
			die "--sasl wants USER:PASSWORD[,USER:PASSWORD]... (names [A-Za-z0-9_-], passwords [A-Za-z0-9_.@%+-]), got '${ARG[SASL]}'"
		SHIFT=2
		;;
	--client-ports)
		ARG[CLIENT_PORTS]=${2:?--client-ports wants P0[,P1]...}
		[[ ${ARG[CLIENT_PORTS]} =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--client-ports wants ports P0[,P1]..., got '${ARG[CLIENT_PORTS]}'"
		SHIFT=2
		;;
	-f | --follow)
		ARG[FOLLOW]=1
		SHIFT=1
		;;
	-*) die "unknown option $1 (see scripts/fluss-local.sh --help)" ;;
	*)
		ARG_POSITIONAL+=("$1")
		SHIFT=1
		;;
	esac
}

main() {
	ARG[NAME]=${FLUSS_LOCAL_CLUSTER:-default} ARG[VERSION]=${FLUSS_VERSION:-$DEFAULT_VERSION}
	parse_args "$@"
	local name=${ARG[NAME]}
	case ${ARG[CMD]} in
	start) cmd_start "$name" "${ARG[VERSION]}" "${ARG[TABLETS]}" "${ARG[OWNER]}" "${ARG[EXTRA]}" "${ARG[SASL]}" "${ARG[CLIENT_PORTS]}" ;;
	bootstrap) cmd_bootstrap "$name" ;;
	client-port)
		[[ ${#ARG_POSITIONAL[@]} -eq 1 ]] || die "client-port wants one tablet server id"
		cmd_client_port "$name" "${ARG_POSITIONAL[0]}"
		;;
	restart-tablet)
		[[ ${#ARG_POSITIONAL[@]} -eq 1 ]] || die "restart-tablet wants one tablet server id"
		cmd_stop_tablet "$name" "${ARG_POSITIONAL[0]}"
		cmd_start_tablet "$name" "${ARG_POSITIONAL[0]}"
		;;
	stop-tablet)
		[[ ${#ARG_POSITIONAL[@]} -eq 1 ]] || die "stop-tablet wants one tablet server id"
		cmd_stop_tablet "$name" "${ARG_POSITIONAL[0]}"
		;;
	start-tablet)
		[[ ${#ARG_POSITIONAL[@]} -eq 1 ]] || die "start-tablet wants one tablet server id"
		cmd_start_tablet "$name" "${ARG_POSITIONAL[0]}"
		;;
	signal-tablet)
		[[ ${#ARG_POSITIONAL[@]} -eq 2 ]] || die "signal-tablet wants a tablet server id and a signal"
		cmd_signal_tablet "$name" "${ARG_POSITIONAL[0]}" "${ARG_POSITIONAL[1]}"
		;;
	signal-coordinator)
		[[ ${#ARG_POSITIONAL[@]} -eq 1 ]] || die "signal-coordinator wants a signal"
		cmd_signal_coordinator "$name" "${ARG_POSITIONAL[0]}"
		;;
	start-coordinator) cmd_start_coordinator "$name" ;;
	logs) cmd_logs "$name" "${ARG[FOLLOW]}" "${ARG[LINES]}" "${ARG_POSITIONAL[0]:-}" ;;
	fetch) fetch_jars "${ARG[VERSION]}" ;;
	fetch-client) fetch_client_jar "${ARG[VERSION]}" ;;
	*) common_command ;;
	esac
}

main "$@"
