#!/bin/bash
# A stand-in for a CLI coding agent invoked as `claude -p PROMPT --dangerously-skip-permissions`
# (synth bench's claude-code preset): it reads the prompt, acts through a shell one command
# at a time (`bash -c`, as such agents' shell tools do) and writes the report the prompt asks for.
set -eu
[ "${1:-}" = "-p" ] && [ "${3:-}" = "--dangerously-skip-permissions" ] || {
    echo "usage: $0 -p PROMPT --dangerously-skip-permissions" >&2; exit 2; }
prompt=$2
[ -n "${ANTHROPIC_API_KEY:-}" ] || { echo "no ANTHROPIC_API_KEY" >&2; exit 3; }
echo "using key $ANTHROPIC_API_KEY"  # synth masks it as *** in agent.log
claims=$(printf '%s\n' "$prompt" | grep -o '/synth/claims\.json' | head -1)
check=$(printf '%s\n' "$prompt" | sed -n 's/.*C1 (CPU): `\(.*\)` must exit 0.*/\1/p')
bash -c 'python3 -m venv /opt/venv'
bash -c "cd /workspace && PATH=/opt/venv/bin:\$PATH $check"
bash -c "echo '{\"python_path\": \"/opt/venv/bin/python\", \"env_tool\": \"venv\"}' > $claims"
