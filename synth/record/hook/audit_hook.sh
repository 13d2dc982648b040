# synth audit hook: sourced by every non-interactive bash through BASH_ENV (and by the
# audited interactive shell through shell_rc.sh).
#
# It appends raw events, one JSON object a line, to $SYNTH_AUDIT_FILE (a host directory
# bind-mounted writable, so events reach the run directory at once and survive a kill).
# synth merges them into audit.jsonl after the session; see docs/formats.md.
#
#   shell      a bash started: its `bash -c` string ($BASH_EXECUTION_STRING) or script
#   begin      DEBUG trap: a simple command is about to run (text, cwd, time)
#   end        the previous simple command finished: $? and PIPESTATUS, seen at the next
#              DEBUG trap or at exit
#   shell-end  EXIT trap: the shell's exit status and final cwd
#
# Rules: builtins only (no forks), never change $? or the caller's options, and never
# write a variable's value: values of the variables named in $SYNTH_SECRET_NAMES are
# masked as *** in every text written.
if [[ -n "${SYNTH_AUDIT_FILE:-}" && -z "${__synth_hooked:-}" ]]; then
__synth_hooked=1
__synth_n=0
__synth_cur=""
__synth_curcmd=""
__synth_last=""
__synth_t="${EPOCHREALTIME/,/.}"
__synth_shell="$$-${__synth_t/./}"
__synth_parent="${SYNTH_AUDIT_PARENT:-}"
__synth_depth="${SYNTH_AUDIT_DEPTH:-0}"
export SYNTH_AUDIT_PARENT="$__synth_shell"
export SYNTH_AUDIT_DEPTH="$((__synth_depth + 1))"

# JSON-escape $1 into __synth_j, secrets masked first.
__synth_json() {
  local s="$1" n v
  for n in ${SYNTH_SECRET_NAMES:-}; do
    v="${!n:-}"
    if [[ -n "$v" ]]; then s="${s//"$v"/***}"; fi
  done
  s="${s//\\/\\\\}"
  s="${s//\"/\\\"}"
  s="${s//$'\n'/\\n}"
  s="${s//$'\r'/\\r}"
  s="${s//$'\t'/\\t}"
  __synth_j="$s"
  return 0
}

__synth_emit() {
  printf '%s\n' "$1" >>"$SYNTH_AUDIT_FILE" 2>/dev/null
  return 0
}

__synth_end() {  # $1: exit status, $2: PIPESTATUS (space-separated)
  if [[ -n "$__synth_cur" ]]; then
    local ps="${2:-$1}"
    __synth_emit "{\"ev\":\"end\",\"shell\":\"$__synth_shell\",\"n\":$__synth_cur,\"t\":${EPOCHREALTIME/,/.},\"rc\":$1,\"ps\":[${ps// /,}]}"
    __synth_cur=""
  fi
  return 0
}

# Called by the DEBUG trap with $?, PIPESTATUS and $_ as they were before the trap; the
# trap then restores $_ (a trap's own last word would replace it).
__synth_debug() {
  local rc="$1" ps="$2"
  __synth_last="${3:-}"
  case "$BASH_COMMAND" in
    # bash 5.2 fires DEBUG once more, stale, while running the EXIT trap (BASH_COMMAND
    # then names a trap); PIPESTATUS is stale there too unless it agrees with $?.
    __synth_exit* | *"__synth_exit; }"* | "trap '"*__synth_*)
      if [[ "${ps##* }" != "$rc" ]]; then ps="$rc"; fi
      __synth_end "$rc" "$ps"
      return 0 ;;
    # The interactive shell's prompt hooks only close the previous command, and what
    # runs between them (the user's own PROMPT_COMMAND) is not the agent's doing.
    __synth_prompt*) __synth_end "$rc" "$ps"; return 0 ;;
    # In an interactive shell the stale DEBUG repeats the `exit` command itself.
    exit | "exit "* | logout)
      if [[ -n "$__synth_cur" && "$BASH_COMMAND" == "$__synth_curcmd" ]]; then
        __synth_end "$rc" "$rc"
        return 0
      fi ;;
  esac
  if [[ -n "$__synth_inprompt" ]]; then return 0; fi
  __synth_end "$rc" "$ps"
  __synth_n=$((__synth_n + 1))
  __synth_cur=$__synth_n
  __synth_curcmd="$BASH_COMMAND"
  local c d
  __synth_json "$BASH_COMMAND"; c="$__synth_j"
  __synth_json "$PWD"; d="$__synth_j"
  __synth_emit "{\"ev\":\"begin\",\"shell\":\"$__synth_shell\",\"n\":$__synth_n,\"pid\":$$,\"cmd\":\"$c\",\"cwd\":\"$d\",\"t\":${EPOCHREALTIME/,/.}}"
  return 0
}

__synth_exit() {
  local rc=$?
  __synth_end "$rc" "$rc"
  local d
  __synth_json "$PWD"; d="$__synth_j"
  __synth_emit "{\"ev\":\"shell-end\",\"shell\":\"$__synth_shell\",\"t\":${EPOCHREALTIME/,/.},\"rc\":$rc,\"cwd\":\"$d\"}"
  return 0
}

__synth_inprompt=""
__synth_prompt_begin() { __synth_inprompt=1; return 0; }
__synth_prompt_end() { __synth_inprompt=""; return 0; }

__synth_interactive=false
case "$-" in *i*) __synth_interactive=true ;; esac
__synth_json "${BASH_EXECUTION_STRING:-}"; __synth_c="$__synth_j"
__synth_json "$0"; __synth_s="$__synth_j"
__synth_json "$PWD"; __synth_d="$__synth_j"
__synth_emit "{\"ev\":\"shell\",\"shell\":\"$__synth_shell\",\"parent\":\"$__synth_parent\",\"depth\":$__synth_depth,\"pid\":$$,\"ppid\":$PPID,\"cmd\":\"$__synth_c\",\"script\":\"$__synth_s\",\"interactive\":$__synth_interactive,\"cwd\":\"$__synth_d\",\"t\":$__synth_t}"
unset __synth_c __synth_s __synth_d
if $__synth_interactive; then
  PROMPT_COMMAND="__synth_prompt_begin; ${PROMPT_COMMAND:+$PROMPT_COMMAND; }__synth_prompt_end"
fi
trap '{ __synth_exit; } 2>/dev/null' EXIT
# The group's redirection keeps the hook's own commands out of `set -x` output.
trap '{ __synth_debug "$?" "${PIPESTATUS[*]}" "$_"; : "$__synth_last"; } 2>/dev/null' DEBUG
fi
