"""Each extractor on the commands it owns; the registry order."""

from __future__ import annotations

import pytest

from synth.distill.extractors import EXTRACTORS, classify
from synth.distill.load import AuditRecord
from synth.distill.shell import SimpleCommand, parse_line
from synth.distill.steps import (
    PYTHON_CHECK,
    AgentClaims,
    AptInstall,
    AptMaintenance,
    AptRemove,
    CondaAction,
    Download,
    EnvExport,
    EnvPersist,
    GitClone,
    LocalDeb,
    NativeBuild,
    PipInstall,
    PipUninstall,
    ProgramRun,
    ReadOnly,
    ShellState,
    Step,
    Unclassified,
    VenvCreate,
)


def one(text: str, cwd: str = "/workspace") -> SimpleCommand:
    cmds = parse_line(AuditRecord(seq=1, source="bash-c", command=text, cwd=cwd, exit=0))
    return cmds[-1]


def step(text: str, cwd: str = "/workspace") -> Step:
    return classify(one(text, cwd))[1]


def test_registry_order_is_documented() -> None:
    assert [e.name for e in EXTRACTORS] == [
        "shell", "apt", "python-env", "pip", "conda", "project-tool", "native", "env",
        "download", "read-only", "program-run"]


@pytest.mark.parametrize(("text", "expected"), [
    ("apt-get install -y --no-install-recommends git build-essential",
     AptInstall(packages=("git", "build-essential"))),
    ("DEBIAN_FRONTEND=noninteractive apt install -y curl=7.88",
     AptInstall(packages=("curl=7.88",))),
    ("sudo apt-get -y purge git", AptRemove(packages=("git",))),
    ("apt-get update", AptMaintenance(action="update")),
    ("apt-cache policy git", ReadOnly(program="apt-cache")),
    ("dpkg -i /tmp/x.deb", LocalDeb(files=("/tmp/x.deb",))),
    ("dpkg -l", ReadOnly(program="dpkg")),
])
def test_apt(text: str, expected: Step) -> None:
    assert step(text) == expected


def test_pip_install_options() -> None:
    s = step("pip install -i https://idx/simple --extra-index-url https://x/simple "
             "-f /synth/wheelhouse --no-build-isolation -r req.txt -e ./pkg "
             "git+https://g/r.git@abc 'numpy==1.26.4' -C key=val")
    assert isinstance(s, PipInstall)
    assert s.tool == "pip" and s.python == "python3"
    assert s.index_url == "https://idx/simple"
    assert s.extra_index_urls == ("https://x/simple",)
    assert s.find_links == ("/synth/wheelhouse",)
    assert s.no_build_isolation
    assert s.requirement_files == ("/workspace/req.txt",)
    assert s.editables == ("/workspace/pkg",) and s.local == ("/workspace/pkg",)
    assert s.urls == ("git+https://g/r.git@abc",)
    assert s.requirements == ("numpy==1.26.4",)
    assert s.build_options == ("-C", "key=val")


def test_local_targets_with_extras_name_the_folder() -> None:
    s = step("/opt/venv/bin/pip install -e '.[examples]'")
    assert isinstance(s, PipInstall)
    assert s.editables == ("/workspace",) and s.local == ("/workspace",)
    s = step("pip install --no-build-isolation './PythonAPI[io, viz]' ../other[x]")
    assert isinstance(s, PipInstall) and s.local == ("/workspace/PythonAPI", "/other")


def test_pip_python_resolution() -> None:
    s = step("/opt/venv/bin/pip install .")
    assert isinstance(s, PipInstall) and s.python == "/opt/venv/bin/python"
    assert s.local == ("/workspace",)
    s = step("source /opt/v/bin/activate && python -m pip install x")
    assert isinstance(s, PipInstall) and s.python == "/opt/v/bin/python"


def test_uv_pip_and_env_vars() -> None:
    s = step("UV_EXTRA_INDEX_URL=https://e/simple uv pip install --python /opt/venv/bin/python "
             "torch==2.13.0+cpu")
    assert isinstance(s, PipInstall)
    assert s.tool == "uv" and s.python == "/opt/venv/bin/python"
    assert s.extra_index_urls == ("https://e/simple",)


def test_pip_s_general_options_before_its_command() -> None:
    # pip 22.3+ runs for the interpreter --python names, or the environment in that folder.
    s = step("python3 -m pip --python /opt/venv/bin/python install --no-build-isolation ./ext")
    assert isinstance(s, PipInstall)
    assert (s.python, s.local, s.no_build_isolation) == (
        "/opt/venv/bin/python", ("/workspace/ext",), True)
    s = step("pip -q --python=.venv --log /tmp/pip.log install six==1.17.0")
    assert isinstance(s, PipInstall)
    assert (s.python, s.requirements) == ("/workspace/.venv/bin/python", ("six==1.17.0",))
    assert isinstance(step("pip --python /opt/venv list"), ReadOnly)
    assert isinstance(step("pip -v --version"), ReadOnly)


def test_pip_uninstall_and_read_only_subcommands() -> None:
    assert step("pip uninstall -y a b") == PipUninstall(tool="pip", python="python3",
                                                        names=("a", "b"))
    assert isinstance(step("pip list"), ReadOnly)
    assert isinstance(step("/opt/venv/bin/pip freeze"), ReadOnly)
    assert isinstance(step("pip --version"), ReadOnly)
    assert isinstance(step("pip show numpy 2>/dev/null"), ReadOnly)


def test_venvs() -> None:
    assert step("python3 -m venv /opt/venv") == VenvCreate(tool="venv", path="/opt/venv",
                                                          python="python3")
    s = step("uv venv --python 3.11 .venv")
    assert isinstance(s, VenvCreate) and s.tool == "uv" and s.path == "/workspace/.venv"
    # --prompt takes a value: the word after it is neither the folder nor dropped (the
    # rebuild ran `python3 -m venv --prompt /opt/venv`, a venv with no folder).
    assert step("python3 -m venv --prompt research --system-site-packages /opt/venv") == (
        VenvCreate(tool="venv", path="/opt/venv", python="python3",
                   options=("--prompt", "research", "--system-site-packages")))
    assert step("uv venv --prompt mine -p 3.11 --seed --link-mode copy /opt/env") == VenvCreate(
        tool="uv", path="/opt/env", python="3.11", options=("--prompt", "mine", "--seed"))


def test_conda() -> None:
    s = step("conda install -y -c conda-forge numpy=1.26 pyyaml")
    assert isinstance(s, CondaAction)
    assert s.channels == ("conda-forge",) and s.packages == ("numpy=1.26", "pyyaml")
    assert isinstance(step("conda list"), ReadOnly)


@pytest.mark.parametrize(("text", "tool"), [
    ("python setup.py build_ext --inplace", "setup.py"),
    ("cmake -S . -B build -G Ninja", "cmake"),
    ("make -j4", "make"),
    ("ninja -C build", "ninja"),
    ("nvcc -O2 -c k.cu -o k.o", "nvcc"),
])
def test_native(text: str, tool: str) -> None:
    s = step(text)
    assert isinstance(s, NativeBuild) and s.tool == tool


def test_compiler_version_is_read_only() -> None:
    assert isinstance(step("gcc --version"), ReadOnly)
    assert isinstance(step("nvcc --version"), ReadOnly)


def test_env() -> None:
    assert step("export TORCH_CUDA_ARCH_LIST='8.0;9.0'") == EnvExport(
        names=("TORCH_CUDA_ARCH_LIST",))
    s = step("echo 'export MAX_JOBS=4' >> ~/.bashrc")
    assert s == EnvPersist(file="/root/.bashrc", assignments=(("MAX_JOBS", "4"),))



@pytest.mark.parametrize("path", ["/etc/profile", "/etc/profile.d/cuda.sh", "/etc/environment",
                                  "/etc/bash.bashrc", "/root/.profile", "/root/.bash_profile"])
def test_env_persisted_in_a_startup_file(path: str) -> None:
    assert step(f"echo 'export A=1' >> {path}") == EnvPersist(file=path,
                                                               assignments=(("A", "1"),))


def test_env_files_are_one_list() -> None:
    """The files the session reads (state/env.json) are the files a redirect persists into."""
    from synth.record import snapshot
    from synth.util.noise import ENV_FILES, is_env_file

    assert "/etc/profile" in ENV_FILES
    assert all(is_env_file(f.replace("*", "x")) for f in ENV_FILES)
    assert all(f in snapshot._ENV_SCRIPT for f in ENV_FILES)
    assert not is_env_file("/etc/profile.bak") and not is_env_file("/root/.bashrc.d")
    assert not isinstance(step("echo 'export A=1' >> /tmp/notes"), EnvPersist)

def test_downloads() -> None:
    assert step("wget -O /data/w.ckpt https://h/w.ckpt") == Download(
        tool="wget", url="https://h/w.ckpt", dest="/data/w.ckpt")
    assert step("git clone --depth 1 https://g/dep.git /opt/dep") == GitClone(
        url="https://g/dep.git", dest="/opt/dep")
    assert step("git clone -b v1 https://g/dep.git", cwd="/src") == GitClone(
        url="https://g/dep.git", dest="/src/dep", ref="v1")


@pytest.mark.parametrize("text", [
    "ls -la", "cat README.md", "nvidia-smi", "which python3", "echo hello",
    "python3 -c 'import sys; print(sys.version)'", "python3 --version",
    "python -c 'from importlib.metadata import version; print(version(\"numpy\"))'",
    "git status", "pip list | grep torch",
])
def test_read_only(text: str) -> None:
    assert isinstance(step(text), ReadOnly)


@pytest.mark.parametrize("text", [
    "python3 -c 'import torch; print(torch.__version__)'",
    ".venv/bin/python -c 'import cartopy, matplotlib'",
    "python -c 'from matplotlib import pyplot'",
])
def test_an_import_check_runs_code_and_is_not_read_only(text: str) -> None:
    """Importing a package runs its code: matplotlib writes ~/.config/matplotlib."""
    assert step(text) == ProgramRun(program=PYTHON_CHECK)


@pytest.mark.parametrize("text", [
    "echo hi > /etc/motd", "python3 -c 'open(\"/x\", \"w\").write(\"y\")'",
    "find / -name x -delete",
])
def test_not_read_only(text: str) -> None:
    assert not isinstance(step(text), ReadOnly)


def test_shell_state_and_unclassified() -> None:
    assert step("cd /x") == ShellState(builtin="cd")
    assert step("rm -rf build") == Unclassified(program="rm")


def test_conda_env_create() -> None:
    assert step("conda env create -f environment.yml") == CondaAction(
        tool="conda", verb="env create", packages=(), files=("/workspace/environment.yml",))


def test_program_runs() -> None:
    assert step("/opt/venv/bin/python train.py --steps 5") == ProgramRun(program="python train.py")
    assert step("python -m pytest -q") == ProgramRun(program="python -m pytest")
    assert isinstance(step("python setup.py develop"), NativeBuild)


@pytest.mark.parametrize(("name", "want"), [
    ("Foo_Bar.baz", "foo-bar-baz"), ("a--b__c", "a-b-c"), ("Zope.Interface", "zope-interface"),
    ("torch", "torch")])
def test_distribution_names_are_pep503(name: str, want: str) -> None:
    from synth.distill.carried import norm_name

    assert norm_name(name) == want


def _classify_asking_every_extractor(cmd: SimpleCommand) -> tuple[str, Step]:
    """The registry's definition: a command that writes the agent's claims is that, else
    every extractor in order, the first step wins."""
    from synth.distill.extractors import _base, _program, _writes_claims

    if not cmd.parsed:
        return classify(cmd)
    if _writes_claims(cmd, _base(_program(cmd)[0])):
        return "claims", AgentClaims(program=_base(_program(cmd)[0]))
    for extractor in EXTRACTORS:
        found = extractor.extract(cmd)
        if found is not None:
            return extractor.name, found
    return "unclassified", Unclassified(program=_base(_program(cmd)[0]))


def _corpus() -> list[SimpleCommand]:
    """Every simple command of the bundled transcripts, and generated ones: each program
    any extractor knows (and some none does) under wrappers, paths and argument shapes."""
    import random
    from pathlib import Path

    from synth.record.transcript import split_statements

    tasks = Path(__file__).resolve().parents[2] / "tasks"
    lines = [s for script in sorted(tasks.glob("*/agents/*.sh"))
             for s in split_statements(script.read_text(encoding="utf-8"))]
    programs = sorted({p for e in EXTRACTORS for p in e.programs if p} | {
        "python", "python3", "python3.11", "pip", "pip3", "pip3.11", "rm", "mv", "node",
        "bash", "sh", "pythonx", "pipx", "ipython", "py.test", "cmake3", "nvcc-12"})
    shapes = ("", "install -y x", "-m pip install -e .", "-m venv /opt/v", "-m build",
              "setup.py develop", "-c 'import x'", "--version", "-h", "list", "show x",
              "pip install x", "venv .v", "clone https://e.org/r.git d", "status",
              "-O /tmp/f https://e.org/f", "'export X=1' >> ~/.bashrc", "X=1", "a.py",
              "-m module", "env create -f e.yml", "remove x", "-i x.deb", "update",
              "uninstall -y x", "download x", "> /tmp/out", "-delete", "log.txt")
    rng = random.Random(7)
    for _ in range(3000):
        prog = rng.choice(programs)
        prog = rng.choice(("", "", "/usr/bin/", "./", "/opt/venv/bin/")) + prog
        wrapper = rng.choice(("", "", "", "sudo ", "env X=1 ", "time ", "nohup "))
        lines.append(f"{wrapper}{prog} {rng.choice(shapes)} {rng.choice(shapes)}".strip())
    lines += ["X=1", "X=1 Y=2", "sudo", "env"]
    out = []
    for i, line in enumerate(lines):
        out += parse_line(AuditRecord(seq=i + 1, source="bash-c", command=line,
                                      cwd="/workspace", exit=0))
    return out


def test_classify_asks_only_the_extractors_that_may_claim_a_program() -> None:
    corpus = _corpus()
    assert len(corpus) > 3000
    claimed = {classify(c)[0] for c in corpus}
    assert claimed >= {e.name for e in EXTRACTORS} | {"unclassified", "claims"}
    for cmd in corpus:
        assert classify(cmd) == _classify_asking_every_extractor(cmd), cmd.text


def test_an_extractor_claims_only_the_programs_it_declares() -> None:
    from synth.distill.extractors import _base, _program

    for cmd in _corpus():
        name = _base(_program(cmd)[0])
        for extractor in EXTRACTORS:
            if not extractor.may_claim(name):
                assert extractor.extract(cmd) is None, (extractor.name, cmd.text)


def test_classify_each_answers_as_classify_does_for_repeated_commands() -> None:
    """classify_each asks classify once per distinct command: the corpus again, each
    command repeated with another seq, exit and flags (same answer expected) and in another
    working folder, environment or activated venv (the key must tell those apart)."""
    from synth.distill.extractors import classify_each

    corpus = _corpus()
    variants = [c._replace(seq=c.seq + 10_000, exit=1, flags=("not-run",)) for c in corpus]
    variants += [c._replace(cwd="/opt/elsewhere") for c in corpus[::3]]
    variants += [c._replace(activated="/opt/v/bin") for c in corpus[1::3]]
    variants += [c._replace(env=(("PIP_INDEX_URL", "https://e.org/simple"),))
                 for c in corpus[2::3]]
    variants += [c._replace(assignments=(("PIP_INDEX_URL", "https://e.org/simple"),))
                 for c in corpus[::3]]
    variants += [c._replace(redirects=((">>", "/root/.bashrc"),)) for c in corpus[1::3]]
    commands = [*corpus, *variants]
    got = list(classify_each(commands))
    assert [c for c, _x, _s in got] == commands
    assert [(x, s) for _c, x, s in got] == [classify(c) for c in commands]
    assert len({(x, s) for _c, x, s in got}) > 100
