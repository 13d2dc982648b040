"""``--agent auto``: synth's own setup agent, rule-based and deterministic (no LLM).

It reads what the repository in ``/workspace`` declares (:mod:`.survey`), plans a setup
with the project's own tool or a venv (:mod:`.plan`), runs each statement as an audited
``bash -c`` like a replay agent, then runs the task's CPU probe; a failure it recognises
gets one targeted repair (:mod:`.repair`) and the probe runs again, within a budget of
repairs. Last it writes ``/synth/claims.json`` from what the interpreter itself reports.
The same repository and package index give the same statements.
"""

from __future__ import annotations

import json
import shlex
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.errors import UsageError
from synth.formats.claims import CONTAINER_CLAIMS
from synth.pyramid.c0_scope import MAX_REPO_FILE
from synth.record.agents import WORKDIR, AgentContext, first_line
from synth.record.auto.plan import Plan, Step, plan_setup
from synth.record.auto.repair import diagnose
from synth.record.auto.survey import Survey, survey_repo
from synth.util.safe_tar import extract

#: Repairs one session may make before the agent gives up.
DEFAULT_BUDGET = 8
#: Tools the plan uses where the image has them.
TOOLS = ("uv", "poetry", "conda", "mamba", "micromamba")
#: Output of one statement kept for diagnosis (its end: where the error is).
_KEEP = 256 * 1024
#: Files of the workspace the survey reads; everything else stays in the container.
_SURVEYED = (".py", ".txt", ".toml", ".cfg", ".yml", ".yaml", ".md", ".rst", ".lock",
             ".python-version", ".c", ".cc", ".cpp", ".cxx", ".cu", ".pyx", "README")


@dataclass(frozen=True)
class AutoAgent:
    budget: int = DEFAULT_BUDGET
    kind: str = field(default="auto", init=False)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "script": None, "argv": None, "repair_budget": self.budget}

    def agent_mounts(self) -> list[Any]:
        return []

    def secret_names(self) -> list[str]:
        return []

    def run(self, ctx: AgentContext) -> int:
        if ctx.task is None:
            raise UsageError("The auto agent needs the task (its probes).")
        session = _Session(ctx, self.budget)
        return session.work()


class _Session:
    def __init__(self, ctx: AgentContext, budget: int) -> None:
        self.ctx = ctx
        self.budget = budget
        self.repairs: list[str] = []
        self.tried: set[str] = set()
        self.notes: list[str] = []
        self.number = 0

    def work(self) -> int:
        task = self.ctx.task
        assert task is not None
        probes = [p.command for p in (task.probes.cpu, task.probes.gpu, task.probes.ddp) if p]
        survey = self.survey(probes)
        tools = self.tools()
        plan = plan_setup(survey, tools)
        self.notes += plan.notes
        self.ctx.say(f"auto: {plan.tool} at {plan.env_name}, {len(plan.steps)} steps"
                     + (f" (tools in the image: {', '.join(sorted(tools))})" if tools else ""))
        for step in plan.steps:
            self.step_with_repairs(step, survey, plan)
            if self.ctx.cancelled.is_set():
                return 1
        passed = self.probe(survey, plan)
        if self.ctx.cancelled.is_set():
            return 1
        self.claims(plan, passed)
        return 0 if passed in (True, None) else 1

    # ------------------------------------------------------------------ reading
    def survey(self, probes: list[str]) -> Survey:
        with tempfile.TemporaryDirectory(prefix="synth-auto-") as tmp:
            root = Path(tmp)
            archive = root / "workspace.tar"
            if not self.ctx.container.save_archive(WORKDIR, archive):
                raise UsageError(f"The session container has no {WORKDIR} to set up.")
            _extract_surveyed(archive, root / "tree")
            archive.unlink()
            return survey_repo(root / "tree" / Path(WORKDIR).name, probes)

    def tools(self) -> set[str]:
        script = "; ".join(f"command -v {t} >/dev/null 2>&1 && echo {t}" for t in TOOLS)
        res = self.ctx.container.exec(["bash", "-c", script + "; true"], env=self.ctx.env,
                                      workdir=WORKDIR)
        return {line for line in res.stdout.split() if line in TOOLS}

    # ---------------------------------------------------------------- statements
    def statement(self, step: Step) -> tuple[int, str]:
        self.number += 1
        self.ctx.say(f"[{self.number}] $ {self.ctx.log.masker.mask(first_line(step.command))}"
                     f"  # {step.why}")
        out = bytearray()

        def keep(data: bytes) -> None:
            out.extend(data)
            del out[:-_KEEP]

        code = self.ctx.run(["bash", "-c", step.command], command=step.command, group=True,
                            echo=keep)
        if code != 0:
            self.ctx.say(f"    exit {code}")
        return code, out.decode("utf-8", errors="replace")

    def step_with_repairs(self, step: Step, survey: Survey, plan: Plan) -> int:
        code, out = self.statement(step)
        while code != 0 and not self.ctx.cancelled.is_set():
            self.tried.add(step.command)  # a repair that would only run it again is none
            found = diagnose(out, survey, plan, self.tried)
            if found is None or found.repair is None:
                self.notes.append(f"`{first_line(step.command, 60)}` failed (exit {code})"
                                  + (f": {found.problem}" if found else ""))
                return code
            if not self.repair(found.problem, found.repair):
                return code
            code, out = self.statement(step)
        return code

    def repair(self, problem: str, step: Step) -> bool:
        if len(self.repairs) >= self.budget:
            self.notes.append(f"{problem}; no repair left in the budget of {self.budget}")
            self.ctx.say(f"    auto: {problem}; the repair budget ({self.budget}) is spent")
            return False
        self.ctx.say(f"    auto: {problem}")
        self.tried.add(step.command)
        self.repairs.append(problem)
        self.statement(step)
        return True

    def probe(self, survey: Survey, plan: Plan) -> bool | None:
        """Run the CPU probe, repairing what it shows is missing; None without one."""
        task = self.ctx.task
        assert task is not None
        if task.probes.cpu is None:
            self.notes.append("the task has no CPU probe: the setup was not tried")
            return None
        probe = task.probes.cpu
        bin_dir = plan.python.rsplit("/", 1)[0]
        command = (f"cd {shlex.quote(task.probes.workdir)} && PATH={bin_dir}:\"$PATH\" "
                   f"timeout {probe.timeout} bash -c {shlex.quote(probe.command)}")
        step = Step(command, "the task's CPU probe, with the environment's python first")
        while not self.ctx.cancelled.is_set():
            code, out = self.statement(step)
            if code == 0:
                self.notes.append("the CPU probe passed"
                                  + (f" after {len(self.repairs)} repairs: "
                                     + "; ".join(self.repairs) if self.repairs else ""))
                return True
            found = diagnose(out, survey, plan, self.tried)
            if found is None or found.repair is None:
                self.notes.append(f"the CPU probe failed (exit {code})"
                                  + (f": {found.problem}" if found else
                                     ": no failure synth knows how to repair"))
                return False
            if not self.repair(found.problem, found.repair):
                return False
        return False

    def claims(self, plan: Plan, passed: bool | None) -> None:
        """``/synth/claims.json`` from what the interpreter reports about itself."""
        notes = "auto agent: " + "; ".join(self.notes)
        script = _CLAIMS_SCRIPT.format(
            out=json.dumps(CONTAINER_CLAIMS), python=json.dumps(plan.python),
            tool=json.dumps(plan.tool), env=json.dumps(plan.env_name), notes=json.dumps(notes))
        command = f"{shlex.quote(plan.python)} - <<'PY'\n{script}PY"
        self.statement(Step(command, "claims from what the interpreter reports"))


_CLAIMS_SCRIPT = """\
import json, platform
facts = {{"python_path": {python}, "python_version": platform.python_version(),
         "torch_version": None, "cuda_available": False, "gpu_count": 0,
         "ddp_expected_ok": False, "env_tool": {tool}, "env_name": {env}, "notes": {notes}}}
try:
    import torch
except Exception:
    pass
else:
    facts["torch_version"] = torch.__version__
    facts["cuda_available"] = bool(torch.cuda.is_available())
    facts["gpu_count"] = torch.cuda.device_count() if facts["cuda_available"] else 0
    facts["ddp_expected_ok"] = facts["gpu_count"] >= 2 and torch.distributed.is_available()
with open({out}, "w") as fh:
    json.dump(facts, fh, indent=2)
"""


def _extract_surveyed(archive: Path, dest: Path) -> None:
    """The workspace's declaration and source files (regular files, bounded size) into
    ``dest``; links, devices and everything else stay out."""
    dest.mkdir()
    with tarfile.open(archive) as tar:
        for member in tar:
            name = member.name.rsplit("/", 1)[-1]
            if not member.isfile() or member.size > MAX_REPO_FILE:
                continue
            if not (name.endswith(_SURVEYED) or name.startswith("README")):
                continue
            try:
                extract(tar, member, dest, policy="data")
            except (tarfile.TarError, OSError):  # REFUSED errors are TarErrors
                continue
