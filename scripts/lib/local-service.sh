# shellcheck shell=bash
# local-service.sh: what scripts/fluss-local.sh, scripts/registry-local.sh and
# scripts/kafka-local.sh share: state files, locking, the owner watcher, stopping processes, the
# command line, and the commands that work the same for every service (stop, status's frame,
# list, logs). Sourced, not run. Before sourcing, the script sets:
#   LS_NAME      its name without .sh ("fluss-local"): the log prefix, the watcher's process title
#                "LS_NAME-watch:INSTANCE" and, with .sh, the name in messages and state files
#   LS_KIND      what one instance is called in messages ("cluster", "instance", "broker")
# and before calling the functions, STATE_DIR (state files and locks), CACHE_DIR (failed/ keeps
# the logs of failed starts), LS_LOGS (the log directory or file inside an instance's directory),
# START_TIMEOUT (seconds wait_for waits) and STOP_TIMEOUT (seconds before SIGKILL). Sourcing sets
# REPO_ROOT (the checkout) and SELF (scripts/LS_NAME.sh, which the watcher runs `stop` with).
# Commands on one instance are serialised on fd 9; fds 7 and 8 are the scripts' other locks. No
# started process inherits any of them.
#
# The script defines these functions, which the library calls on the loaded instance (ST):
#   usage          the help text, on stderr
#   alive          true if a process of the instance runs
#   stop_instance  stop the owner watcher and every process of the instance
#   address        the KEY=VALUE the instance answers with, for `list` and "already runs"
#   describe       what runs, for status's first line ("Fluss 0.9.1-incubating")
#   parse_option   (optional) take a script's own option: sets SHIFT to the words it used
#   on_fail_start  (optional) what to show before fail_start stops what was started
#
# Functions:
#   log, die, now_ms, java_major                  messages, time, Java versions
#   need_maven, staging_dir, maven_copy, publish   downloads into CACHE_DIR
#   state_file, load_state, save_state, lock       the state file (ST) and the instance's lock
#   load_instance, load_running                    load_state or die
#   owns, port_in_use, pick_port, terminate_marked processes and ports
#   launch, wait_for                               start a detached process in the instance's
#                                                  directory, wait until it is ready
#   start_owner_watch, stop_watcher                the -o owner watcher
#   check_owner, claim, begin_start, end_start, fail_start
#                                                  the steps every start takes
#   own_dir, remove_dir                            the instance's directory
#   parse_args, common_command                     the command line; stop, status, list, help
#   cmd_stop, cmd_list, status_head, status_owner, status_line, tail_logs
#                                                  the commands (or their common parts)

: "${LS_NAME:?set LS_NAME before sourcing local-service.sh}" "${LS_KIND:?set LS_KIND before sourcing local-service.sh}"

# REPO_ROOT is the checkout the scripts are in; SELF, the script, is what the watcher runs `stop` with.
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly REPO_ROOT
readonly SELF="$REPO_ROOT/scripts/$LS_NAME.sh"

log() { printf '%s: %s\n' "$LS_NAME" "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

now_ms() { date +%s%3N; }

# ---------------------------------------------------------------------------- java

java_major() { # java_major JAVA -> major version number; 1 if JAVA does not say one
	local line
	line=$("$1" -version 2>&1 | head -n 1) || return 1
	line=${line#*\"}
	line=${line%%\"*}
	case $line in
	1.*) line=${line#1.} ;;
	esac
	line=${line%%[.+-]*}
	[[ $line =~ ^[0-9]+$ ]] || return 1
	printf '%s\n' "$line"
}

# ---------------------------------------------------------------------------- downloads

readonly MDP=org.apache.maven.plugins:maven-dependency-plugin:3.6.1

# need_maven WHAT: die unless mvn is there to download WHAT with.
need_maven() {
	command -v mvn >/dev/null 2>&1 ||
		die "Maven is required to download $1; install it: apt-get install maven"
}

# staging_dir DEST: prints a new directory DEST.tmp.XXXXXX (readable by all) to build DEST in.
staging_dir() {
	local tmp
	mkdir -p "$(dirname "$1")"
	tmp=$(mktemp -d "$1.tmp.XXXXXX")
	chmod 755 "$tmp"
	printf '%s\n' "$tmp"
}

# maven_copy ARTIFACT DIR: download ARTIFACT (group:artifact:version[:type[:classifier]]) into
# DIR; 1, after showing Maven's output, if that fails.
maven_copy() {
	if ! mvn -B -q "$MDP:copy" -Dartifact="$1" -DoutputDirectory="$2" -Dmdep.overWriteReleases=true >"$2/mvn.log" 2>&1; then
		cat "$2/mvn.log" >&2
		return 1
	fi
	rm -f "$2/mvn.log"
}

# publish TMP DEST: move the complete TMP to DEST. Another command may have raced us: the first
# complete copy wins, TMP is removed and publish returns 1.
publish() {
	mv -T "$1" "$2" 2>/dev/null && return 0
	rm -rf "$1"
	return 1
}

# ---------------------------------------------------------------------------- state

state_file() { printf '%s/%s.state\n' "$STATE_DIR" "$1"; }

declare -A ST=()

# load_state NAME: fills ST from the state file; returns 1 if there is none.
load_state() {
	local f k v
	f=$(state_file "$1")
	[[ -f $f ]] || return 1
	ST=()
	while IFS='=' read -r k v; do
		[[ -z $k || $k == \#* ]] && continue
		ST[$k]=$v
	done <"$f"
	return 0
}

# save_state: writes ST to the state file of ST[NAME], atomically.
save_state() {
	local f tmp k
	f=$(state_file "${ST[NAME]}")
	mkdir -p "$STATE_DIR"
	tmp="$f.tmp.$$"
	{
		echo "# $LS_NAME.sh $LS_KIND state; KEY=VALUE lines"
		for k in $(printf '%s\n' "${!ST[@]}" | sort); do
			printf '%s=%s\n' "$k" "${ST[$k]}"
		done
	} >"$tmp"
	mv -f "$tmp" "$f"
}

# lock NAME: serialise commands on one instance (fd 9; children must not inherit it).
lock() {
	mkdir -p "$STATE_DIR"
	exec 9>"$STATE_DIR/$1.lock"
	flock -w 600 9 || die "timed out waiting for another $LS_NAME.sh command on $LS_KIND $1"
}

# load_instance NAME: load_state, or die if there is no such instance.
load_instance() { load_state "$1" || die "no $LS_KIND '$1'"; }

# load_running NAME: load_instance, and die unless it runs.
load_running() {
	load_instance "$1"
	alive || die "$LS_KIND '$1' is not running"
}

# ---------------------------------------------------------------------------- processes

# owns PID MARK: true if PID is alive and its command line holds MARK (the instance's directory).
owns() {
	local pid=$1 mark=$2
	[[ -n $pid && $pid =~ ^[0-9]+$ ]] || return 1
	[[ -r /proc/$pid/cmdline ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$mark"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_port: sets PORT to a port nobody listens on (a bind failure is retried by the callers).
PORT=
pick_port() {
	local i
	for ((i = 0; i < 200; i++)); do
		PORT=$((20000 + RANDOM % 12000)) # below Linux's ephemeral range (32768+)
		port_in_use "$PORT" || return 0
	done
	die "no free port found on 127.0.0.1"
}

# terminate_marked WHAT MARK PID...: TERM the pids whose command line holds MARK, KILL what
# survives STOP_TIMEOUT, and return once they are gone.
terminate_marked() {
	local what=$1 mark=$2
	shift 2
	local pid alive=() deadline
	for pid in "$@"; do
		if owns "$pid" "$mark"; then
			kill -TERM "$pid" 2>/dev/null || true
			alive+=("$pid")
		fi
	done
	((${#alive[@]} > 0)) || return 0
	deadline=$(($(date +%s) + STOP_TIMEOUT))
	while (($(date +%s) < deadline)); do
		local still=()
		for pid in "${alive[@]}"; do
			owns "$pid" "$mark" && still+=("$pid")
		done
		((${#still[@]} == 0)) && return 0
		alive=("${still[@]}")
		sleep 0.2
	done
	log "$what did not stop within ${STOP_TIMEOUT}s; sending KILL to ${alive[*]}"
	for pid in "${alive[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
	for pid in "${alive[@]}"; do
		while owns "$pid" "$mark"; do sleep 0.1; done
	done
}

# launch LOGFILE ARGS...: start a detached process in the instance's directory (own session, no
# inherited lock fds), print its pid.
launch() {
	local logfile=$1
	shift
	(
		cd "${ST[DIR]}" || exit 1
		exec setsid "$@" </dev/null >>"$logfile" 2>&1 7>&- 8>&- 9>&-
	) &
	printf '%s\n' "$!"
}

# wait_for PID LOG EXITED TIMED_OUT INTERVAL TEST...: run TEST every INTERVAL seconds until it
# holds. If process PID exits first, say EXITED with LOG's last lines and return 1; after
# START_TIMEOUT seconds, fail_start TIMED_OUT.
wait_for() {
	local pid=$1 logfile=$2 exited=$3 timed_out=$4 interval=$5
	shift 5
	local deadline=$(($(date +%s) + START_TIMEOUT))
	until "$@"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			log "$exited; last log lines:"
			tail -n 30 "$logfile" >&2 || true
			return 1
		fi
		(($(date +%s) < deadline)) || fail_start "$timed_out"
		sleep "$interval"
	done
}

# ---------------------------------------------------------------------------- owner watcher

# start_owner_watch NAME OWNER LOGFILE: a detached watcher that runs `SELF stop -s NAME` once
# process OWNER has exited; sets ST[WATCHER_PID] and ST[OWNER_PID].
start_owner_watch() {
	local name=$1 owner=$2 logfile=$3
	(
		# shellcheck disable=SC2016 # the script expands its own positional parameters
		exec setsid bash -c '
			owner=$1 self=$2 name=$3
			while kill -0 "$owner" 2>/dev/null; do sleep 2; done
			"$self" stop -s "$name" --from-watcher
		' "$LS_NAME-watch:$name" "$owner" "$SELF" "$name" </dev/null >>"$logfile" 2>&1 7>&- 8>&- 9>&-
	) &
	ST[WATCHER_PID]=$!
	ST[OWNER_PID]=$owner
}

# stop_watcher: TERM the loaded instance's watcher, if it still runs.
stop_watcher() {
	if [[ -n ${ST[WATCHER_PID]:-} ]] && owns "${ST[WATCHER_PID]}" "$LS_NAME-watch:${ST[NAME]} "; then
		kill -TERM "${ST[WATCHER_PID]}" 2>/dev/null || true
	fi
}

# ---------------------------------------------------------------------------- directories

# own_dir DIR: true if DIR is an instance directory these scripts make (under STATE_DIR, or a
# temporary LS_NAME-NAME.XXXXXX), so that a state file never makes us remove anything else.
own_dir() { [[ $1 == "$STATE_DIR/"* || $1 == */"$LS_NAME"-* ]]; }

# remove_dir: remove the loaded instance's directory.
remove_dir() {
	if [[ -n ${ST[DIR]:-} && -d ${ST[DIR]} ]] && own_dir "${ST[DIR]}"; then
		rm -rf "${ST[DIR]}"
	fi
}

# ---------------------------------------------------------------------------- start

# check_owner OWNER: an -o value must be the pid of a running process (empty: no owner).
check_owner() {
	[[ -n $1 ]] || return 0
	[[ $1 =~ ^[0-9]+$ ]] || die "-o wants a pid, got '$1'"
	kill -0 "$1" 2>/dev/null || die "owner process $1 does not run"
}

# claim NAME OWNER [REUSE]: take NAME's lock for a start by OWNER (see check_owner). If an
# instance of that name is alive, claim dies; with REUSE (a test such as "serving"), an instance
# that passes it is kept instead: it stays loaded in ST and RUNNING is 1. Whatever else a state
# file names is stale: it is stopped and removed.
RUNNING=
# shellcheck disable=SC2034 # RUNNING is claim's answer to the script
claim() {
	local name=$1 owner=$2 reuse=${3:-}
	RUNNING=
	check_owner "$owner"
	lock "$name"
	load_state "$name" || return 0
	if [[ -n $reuse ]]; then
		if "$reuse"; then
			RUNNING=1
			return 0
		fi
	elif alive; then
		die "$LS_KIND '$name' already runs ($(address)); stop it first: scripts/$LS_NAME.sh stop -s $name"
	fi
	log "$LS_KIND '$name' has a stale state file; cleaning up"
	stop_instance
	remove_dir
	rm -f "$(state_file "$name")"
}

# begin_start OWNER WATCH_LOG: ST holds the new instance. Saves it, makes INT and TERM undo the
# start, and with OWNER starts the owner watcher (its output to WATCH_LOG).
begin_start() {
	local owner=$1 watch_log=$2
	save_state
	trap 'fail_start "interrupted"' INT TERM
	if [[ -n $owner ]]; then
		# Watch from the start: if this script is killed half-way, the owner's exit still cleans up.
		start_owner_watch "${ST[NAME]}" "$owner" "$watch_log"
		save_state
	fi
}

# end_start: the instance runs; INT and TERM no longer undo it.
end_start() {
	trap - INT TERM
	save_state
}

# fail_start MSG: during start, stop what was started, keep its logs under CACHE_DIR/failed (or,
# with env KEEP_FAILED_DIR, its whole directory), forget the instance and exit 1.
fail_start() {
	log "error: $*"
	if [[ -n ${ST[DIR]:-} ]]; then
		if declare -F on_fail_start >/dev/null; then
			on_fail_start
		fi
		stop_instance
		if [[ -n ${KEEP_FAILED_DIR:-} ]]; then
			log "keeping ${ST[DIR]}"
		else
			keep_failed_logs
			rm -rf "${ST[DIR]}"
		fi
		rm -f "$(state_file "${ST[NAME]}")" "$STATE_DIR/${ST[NAME]}.lock"
	fi
	exit 1
}

# keep_failed_logs: copy LS_LOGS of the loaded instance to CACHE_DIR/failed/NAME-SECONDS[.log].
keep_failed_logs() {
	local src=${ST[DIR]}/$LS_LOGS kept
	kept="$CACHE_DIR/failed/${ST[NAME]}-$(date +%s)"
	mkdir -p "$CACHE_DIR/failed"
	if [[ -d $src ]]; then
		cp -r "$src" "$kept" 2>/dev/null || true
		log "logs copied to $kept"
	elif cp "$src" "$kept.log" 2>/dev/null; then
		log "log kept in $kept.log"
	fi
}

# ---------------------------------------------------------------------------- command line

# parse_args COMMAND [OPTION]...: fills ARG: CMD, and from the options every script takes NAME
# (-s), VERSION (-v), OWNER (-o), LINES (-l) and FROM_WATCHER (--from-watcher, which only the
# watcher passes). NAME and VERSION keep what the script set as defaults. Other words go to the
# script's parse_option, which may store into ARG too, else they are an error.
declare -A ARG=([CMD]="" [NAME]=default [VERSION]="" [OWNER]="" [LINES]=100 [FROM_WATCHER]="")
SHIFT=0
parse_args() {
	[[ $# -gt 0 ]] || {
		usage
		exit 2
	}
	ARG[CMD]=$1
	shift
	while [[ $# -gt 0 ]]; do
		case $1 in
		-s | --name)
			ARG[NAME]=${2:?-s wants a name}
			shift 2
			;;
		-v | --version)
			ARG[VERSION]=${2:?-v wants a version}
			shift 2
			;;
		-o | --owner)
			ARG[OWNER]=${2:?-o wants a pid}
			shift 2
			;;
		-l | --lines)
			ARG[LINES]=${2:?-l wants a number}
			shift 2
			;;
		--from-watcher)
			ARG[FROM_WATCHER]=1
			shift
			;;
		-h | --help)
			usage
			exit 0
			;;
		*)
			SHIFT=0
			if declare -F parse_option >/dev/null; then
				parse_option "$@"
			fi
			((SHIFT > 0)) || die "unknown argument $1 (see scripts/$LS_NAME.sh --help)"
			shift "$SHIFT"
			;;
		esac
	done
	[[ ${ARG[NAME]} =~ ^[A-Za-z0-9_.-]+$ ]] || die "$LS_KIND name may hold only letters, digits, '.', '_' and '-': '${ARG[NAME]}'"
}

# common_command: run ARG[CMD] if it is one every script has (stop, status, list, help); any other
# is unknown.
common_command() {
	case ${ARG[CMD]} in
	stop) cmd_stop "${ARG[NAME]}" "${ARG[FROM_WATCHER]}" ;;
	status) cmd_status "${ARG[NAME]}" ;;
	list) cmd_list ;;
	-h | --help | help) usage ;;
	*)
		usage
		die "unknown command '${ARG[CMD]}'"
		;;
	esac
}

# ---------------------------------------------------------------------------- commands

# cmd_stop NAME FROM_WATCHER: stop the instance, remove its directory and state; fine if none.
cmd_stop() {
	local name=$1 from_watcher=$2 t0
	lock "$name"
	if ! load_state "$name"; then
		log "no $LS_KIND '$name' (no state file $(state_file "$name"))"
		return 0
	fi
	if [[ -n $from_watcher ]]; then
		ST[WATCHER_PID]= # the watcher runs this stop: do not TERM it
		log "owner ${ST[OWNER_PID]:-?} exited; stopping $LS_KIND '$name'"
	fi
	t0=$(now_ms)
	stop_instance
	remove_dir
	rm -f "$(state_file "$name")" "$STATE_DIR/$name.lock"
	log "$LS_KIND '$name' stopped in $(($(now_ms) - t0))ms"
}

# cmd_list: one line per state file, "NAME running ADDRESS" or "NAME stale".
cmd_list() {
	local f n
	for f in "$STATE_DIR"/*.state; do
		[[ -f $f ]] || continue
		n=$(basename "$f" .state)
		if load_state "$n" && alive; then
			echo "$n running $(address)"
		else
			echo "$n stale"
		fi
	done
}

# status_head NAME [LABEL]: load NAME and print status's first line ("LABEL 'NAME': DESCRIBE, dir
# ..., started ..."; LABEL defaults to LS_KIND); 1, after saying so, if there is no such instance
# (cmd_status then exits 3).
status_head() {
	local name=$1 label=${2:-$LS_KIND}
	if ! load_state "$name"; then
		echo "$label '$name': not running (no state file)"
		return 1
	fi
	echo "$label '$name': $(describe), dir ${ST[DIR]}, started $(date -d "@${ST[STARTED]}" '+%F %T')"
}

# status_owner: the status line of an instance started with -o.
status_owner() {
	if [[ -n ${ST[OWNER_PID]:-} ]]; then
		echo "  stops when process ${ST[OWNER_PID]} exits"
	fi
}

# status_line WHAT PID ADDR [DOWN_ADDR]: the status line of one process of the instance, which
# Go helpers parse ("  tablet-0     running  pid 12333    127.0.0.1:PORT"); 1 if it is down.
status_line() {
	local what=$1 pid=$2 addr=$3 down_addr=${4-$3}
	if owns "$pid" "${ST[DIR]:-/nonexistent}"; then
		printf '  %-12s running  pid %-8s 127.0.0.1:%s\n' "$what" "$pid" "$addr"
	else
		printf '  %-12s DOWN     pid %-8s 127.0.0.1:%s\n' "$what" "${pid:--}" "$down_addr"
		return 1
	fi
}

# tail_logs FOLLOW LINES FILE...: the last LINES lines of the files; with FOLLOW, keep following.
tail_logs() {
	local follow=$1 lines=$2
	shift 2
	if [[ -n $follow ]]; then
		exec tail -n "$lines" -F "$@"
	fi
	tail -n "$lines" "$@"
}
