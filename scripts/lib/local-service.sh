# shellcheck shell=bash
# local-service.sh: what scripts/fluss-local.sh and scripts/registry-local.sh share. Sourced, not
# run. Before sourcing, the script sets:
#   LS_NAME      its name without .sh ("fluss-local"): the log prefix, the watcher's process title
#                "LS_NAME-watch:INSTANCE" and, with .sh, the name in messages and state files
#   LS_KIND      what one instance is called in messages ("cluster", "instance")
# and before calling the functions, STATE_DIR (state files and locks), STOP_TIMEOUT (seconds
# before SIGKILL) and SELF (the script's path, which the watcher runs `stop` with).
# Commands on one instance are serialised on fd 9; fds 7 and 8 are the scripts' other locks.
# No started process inherits any of them.

: "${LS_NAME:?set LS_NAME before sourcing local-service.sh}" "${LS_KIND:?set LS_KIND before sourcing local-service.sh}"

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
