# Runs one agent statement in a process group of its own (POSIX sh: `sh run_group.sh CMD…`).
# When the statement is killed (it ends by a signal), what it left running in its group is
# killed too, so nothing outlives a killed statement into the next one.
setsid "$@" &
pid=$!
wait "$pid"
rc=$?
if [ "$rc" -gt 128 ]; then kill -9 -"$pid" 2>/dev/null; fi
exit "$rc"
