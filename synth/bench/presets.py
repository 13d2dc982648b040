"""Agent presets for command-line coding agents that read a task prompt and act through a
shell. ``--agent NAME=preset:PRESET:HOST_BINARY``: the binary is mounted read-only from the
host at ``/synth/agent/<basename>`` (never installed in the image), the variables the preset
names are passed from this environment (masked as secrets in every log), and the agent gets
the prompt of :func:`prompt` and the bench's ``--timeout``.

| preset | command in the container | variables |
|---|---|---|
| ``prompt-arg`` | ``BIN PROMPT`` | none |
| ``prompt-stdin`` | ``BIN`` with the prompt on its standard input | none |
| ``claude-code`` | ``BIN -p PROMPT --dangerously-skip-permissions`` | ``ANTHROPIC_API_KEY`` |
| ``codex`` | ``BIN exec --full-auto PROMPT`` | ``OPENAI_API_KEY`` |

A node-based CLI needs ``node`` in the session container (a base image or task that has
it); synth does not install one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from synth.engine.base import Mount
from synth.errors import UsageError
from synth.formats.claims import CONTAINER_CLAIMS
from synth.formats.task import Task
from synth.record.agents import WORKDIR, ExecAgent
from synth.record.claims import report_fields

AGENT_DIR = "/synth/agent"


@dataclass(frozen=True)
class Preset:
    argv: tuple[str, ...]  # {bin} and {prompt} are replaced
    env_names: tuple[str, ...] = ()


PRESETS = {
    "prompt-arg": Preset(("{bin}", "{prompt}")),
    "prompt-stdin": Preset(("bash", "-c", 'printf "%s" "$1" | "$0"', "{bin}", "{prompt}")),
    "claude-code": Preset(("{bin}", "-p", "{prompt}", "--dangerously-skip-permissions"),
                          ("ANTHROPIC_API_KEY",)),
    "codex": Preset(("{bin}", "exec", "--full-auto", "{prompt}"), ("OPENAI_API_KEY",)),
}


def check_preset(name: str, binary: str) -> None:
    if name not in PRESETS:
        raise UsageError(f"Unknown agent preset {name!r}.",
                         hint=f"Presets: {', '.join(sorted(PRESETS))}.")
    if not Path(binary).is_file():
        raise UsageError(f"Agent preset {name}: the binary {binary} is not a file here.",
                         hint="Give the host path of the agent's executable.")


def prompt(task: Task, timeout: float) -> str:
    probes = []
    if task.probes.cpu is not None:
        probes.append(f"- C1 (CPU): `{task.probes.cpu.command}` must exit 0")
    if task.probes.gpu is not None:
        probes.append(f"- C3 (one GPU): `{task.probes.gpu.command}` must exit 0")
    if task.probes.ddp is not None:
        probes.append(f"- C4 (DDP): `{task.probes.ddp.command}` must exit 0")
    probes += [f"- {m} must import" for m in task.probes.native_modules]
    probes.append("- C0: every import of the repository's Python files must resolve")
    return "\n".join([
        f"Set up the research repository in {WORKDIR} so that its code runs.",
        f"Task: {task.name}. {task.description}".rstrip(),
        f"Target Python: {task.python.version or 'any'}." if task.python.version else "",
        "You will be judged by these checks, run in an image rebuilt from your commands:",
        *probes,
        f"When done, write a JSON report to {CONTAINER_CLAIMS} with the fields "
        f"{', '.join(report_fields())} (null where you do not know).",
        f"You have {int(timeout)} seconds.",
    ]).replace("\n\n", "\n")


def preset_agent(name: str, binary: str, task: Task, timeout: float) -> ExecAgent:
    check_preset(name, binary)
    spec = PRESETS[name]
    host = Path(binary).resolve()
    target = f"{AGENT_DIR}/{host.name}"
    text = prompt(task, timeout)
    argv = [a.replace("{bin}", target).replace("{prompt}", text) for a in spec.argv]
    return ExecAgent(argv, [Mount(host, target, read_only=True)], list(spec.env_names))
