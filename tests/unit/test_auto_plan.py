"""The auto agent's pure parts: what it reads, the plan it makes, the repairs it picks."""

from __future__ import annotations

from pathlib import Path

import pytest

from synth.cli.run import DEFAULT_REPAIR_BUDGET
from synth.errors import UsageError
from synth.formats.task import load_task
from synth.record.agent_choice import make_agent
from synth.record.auto.agent import DEFAULT_BUDGET, AutoAgent
from synth.record.auto.plan import build_requirements, conda_to_pip, plan_setup
from synth.record.auto.repair import diagnose
from synth.record.auto.survey import parse_environment_yml, readme_requirements, survey_repo

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def bundled(name: str) -> tuple[list[str], list[str]]:
    """(the plan's commands, its notes) for a bundled task, in an image without tools."""
    task = load_task(TASKS / name)
    assert task.repo_path is not None and task.probes.cpu is not None
    plan = plan_setup(survey_repo(task.repo_path, [task.probes.cpu.command]), set())
    return [s.command for s in plan.steps], list(plan.notes)


def test_extras_only_installs_the_extra_its_entrypoint_imports_and_not_the_other() -> None:
    commands, _ = bundled("extras-only")
    assert commands == ["python3 -m venv /opt/venv", "/opt/venv/bin/pip install '.[yaml]'"]


def test_optional_extras_leaves_out_extras_no_entrypoint_imports() -> None:
    commands, _ = bundled("optional-extras")
    assert commands == ["python3 -m venv /opt/venv",
                        "/opt/venv/bin/pip install -r requirements.txt",
                        "/opt/venv/bin/pip install ."]


def test_a_native_project_gets_compilers_and_builds_against_the_installed_numpy() -> None:
    commands, _ = bundled("numpy-ext")
    assert commands[0] == "apt-get update"
    assert commands[1].endswith("gcc libc6-dev python3-dev")
    assert commands[-2:] == ["/opt/venv/bin/pip install 'setuptools>=61' wheel",
                             "/opt/venv/bin/pip install --no-build-isolation ."]
    cpp, _ = bundled("torch-op")
    assert "g++" in cpp[1].split()


FLAT_NATIVE = {
    "setup.py": "from setuptools import setup, Extension\n"
                "setup(name='op', ext_modules=[Extension('op._C', ['op/csrc/a.c'])])\n",
    "op/__init__.py": "from . import _C\n",
    "op/csrc/a.c": "int x;\n",
    "tests/__init__.py": "",
    "tests/test_op.py": "import op\n",
    "docs/conf.py": "",
}


@pytest.mark.parametrize(("backend", "editable"), [
    (None, True), ("setuptools.build_meta", True), ("mesonpy", False)])
def test_a_native_package_at_the_root_is_installed_editable_by_setuptools_only(
        tmp_path: Path, backend: str | None, editable: bool) -> None:
    """Run from the root, ``import op`` finds the checkout's op/, which a plain install
    leaves without its compiled ``_C``; setuptools' editable install builds it there.
    (meson-python's editable install rebuilds at import time instead: not chosen.)"""
    files = dict(FLAT_NATIVE)
    if backend is not None:
        files["pyproject.toml"] = (f'[build-system]\nrequires = ["setuptools", "meson-python"]'
                                   f'\nbuild-backend = "{backend}"\n')
    root = _project(tmp_path, files)
    survey = survey_repo(root, ["python tests/test_op.py"])
    assert survey.root_packages == ("op", "tests")  # docs/ has no __init__.py
    steps = plan_setup(survey, set()).steps
    install = steps[-1]
    if editable:
        assert install.command == "/opt/venv/bin/pip install --no-build-isolation -e ."
        assert "editable: op, tests at the repository's root" in install.why
    else:
        assert install.command == "/opt/venv/bin/pip install --no-build-isolation ."


def test_an_extras_repair_installs_the_native_package_as_the_plan_did(tmp_path: Path) -> None:
    files = {**FLAT_NATIVE, "setup.py": FLAT_NATIVE["setup.py"].replace(
        "ext_modules", "extras_require={'viz': ['rich']}, ext_modules")}
    survey = survey_repo(_project(tmp_path, files), ["python tests/test_op.py"])
    found = diagnose("ModuleNotFoundError: No module named 'rich'", survey,
                     plan_setup(survey, set()), set())
    assert found is not None and found.repair is not None
    assert found.repair.command == "/opt/venv/bin/pip install --no-build-isolation -e '.[viz]'"


def test_a_pure_package_at_the_root_is_installed_as_it_is(tmp_path: Path) -> None:
    root = _project(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='op')\n",
                               "op/__init__.py": "", "main.py": "import op\n"})
    assert plan_setup(survey_repo(root, ["python main.py"]), set()).steps[-1].command == (
        "/opt/venv/bin/pip install .")


def test_an_environment_file_without_conda_maps_to_pip_and_apt_and_says_so() -> None:
    commands, notes = bundled("conda-only")
    assert commands[1].endswith("apt-get install -y --no-install-recommends graphviz")
    assert commands[-1] == ("/opt/venv/bin/pip install 'numpy==1.26.*' 'scipy>=1.11' pyyaml "
                            "msgpack graphviz")
    assert "python-graphviz -> pip graphviz" in notes[0]
    assert "graphviz -> apt graphviz" in notes[0]


def test_the_same_repository_gives_the_same_plan() -> None:
    assert bundled("numpy-ext") == bundled("numpy-ext")


def _project(tmp: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    return tmp


UV_PROJECT = {
    "pyproject.toml": '[project]\nname = "p"\nversion = "0"\ndependencies = []\n'
                      '[project.optional-dependencies]\nviz = ["rich"]\n'
                      '[dependency-groups]\ndev = ["pytest"]\n',
    "uv.lock": "version = 1\n",
    "main.py": "import rich\n",
}


def test_the_projects_own_tool_where_the_image_has_it(tmp_path: Path) -> None:
    survey = survey_repo(_project(tmp_path, UV_PROJECT), ["python main.py"])
    uv = plan_setup(survey, {"uv"})
    assert uv.tool == "uv" and [s.command for s in uv.steps] == ["uv sync --frozen --extra viz"]
    assert uv.python == "/workspace/.venv/bin/python"
    pip = plan_setup(survey, set())
    assert pip.tool == "venv"
    assert any("uv.lock is uv's lock and uv is not in the image" in n for n in pip.notes)
    assert [s.command for s in pip.steps][-1] == "/opt/venv/bin/pip install '.[viz]'"


def test_a_dependency_group_the_entrypoint_imports_is_installed(tmp_path: Path) -> None:
    files = {**UV_PROJECT, "main.py": "import pytest\n"}
    survey = survey_repo(_project(tmp_path, files), ["python main.py"])
    assert survey.needed_groups == ("dev",)
    assert "/opt/venv/bin/pip install pytest" in [s.command for s in
                                                  plan_setup(survey, set()).steps]


def test_conda_with_conda_in_the_image(tmp_path: Path) -> None:
    root = _project(tmp_path, {"environment.yml": "dependencies:\n  - numpy\n"})
    plan = plan_setup(survey_repo(root, []), {"micromamba", "conda"})
    assert plan.tool == "conda"
    assert plan.steps[-1].command == ("micromamba env create -y -p /opt/conda-env "
                                      "-f environment.yml")


def test_the_readme_is_followed_only_when_no_file_declares_anything(tmp_path: Path) -> None:
    readme = ("# Tool\n\n## Installation\n\n```bash\n$ pip install numpy 'scipy>=1.11' -e . "
              "&& echo done\npip install -r requirements-dev.txt\n```\n\n## Usage\n\n"
              "```\npip install notthis\n```\n")
    root = _project(tmp_path, {"README.md": readme, "run.py": "import numpy\n"})
    assert readme_requirements(root) == ("numpy", "scipy>=1.11")
    plan = plan_setup(survey_repo(root, ["python run.py"]), set())
    assert plan.steps[-1].command == "/opt/venv/bin/pip install numpy 'scipy>=1.11'"
    (root / "requirements.txt").write_text("numpy\n")
    plan = plan_setup(survey_repo(root, ["python run.py"]), set())
    assert "notthis" not in str(plan.steps) and "scipy" not in str(plan.steps)


def test_environment_file_parsing_and_conda_specs() -> None:
    env = parse_environment_yml(
        "name: x  # the env\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.11\n"
        "  - numpy=1.26\n  - conda-forge::scipy 1.11.4 py311_0\n  - torchvision=0.16.0=py311_cpu\n"
        "  - pytorch>=2.1\n  - cudatoolkit=11.8\n  - pip\n  - pip:\n      - einops==0.7\n"
        "      - --extra-index-url https://x\n  - ffmpeg\nvariables:\n  - A\n")
    assert env.conda == ("python=3.11", "numpy=1.26", "conda-forge::scipy 1.11.4 py311_0",
                         "torchvision=0.16.0=py311_cpu", "pytorch>=2.1", "cudatoolkit=11.8",
                         "pip", "ffmpeg")
    assert env.pip == ("einops==0.7", "--extra-index-url https://x")
    pip, apt, said = conda_to_pip(env)
    assert pip == ["numpy==1.26.*", "scipy==1.11.4", "torchvision==0.16.0", "torch>=2.1",
                   "einops==0.7"]
    assert apt == ["ffmpeg"] and "pytorch -> pip torch" in said


def test_build_requirements_never_reinstall_what_the_build_compiles_against() -> None:
    assert build_requirements(["setuptools>=64", "oldest-supported-numpy", "torch",
                               "Cython>=3", "setuptools"]) == ["Cython>=3", "setuptools>=64",
                                                               "wheel"]


EXTRAS_PYPROJECT = ('[project]\nname = "p"\nversion = "0"\n'
                    '[project.optional-dependencies]\ncli = ["PyYAML>=6"]\n')


@pytest.mark.parametrize(("output", "problem", "command"), [
    ("Traceback …\nModuleNotFoundError: No module named 'tensorboardX'\n",
     "module tensorboardX is missing: installing tensorboardX (mapping)",
     "/opt/venv/bin/pip install tensorboardX"),
    ("ModuleNotFoundError: No module named 'sklearn.linear_model'",
     "module sklearn.linear_model is missing: installing scikit-learn (mapping)",
     "/opt/venv/bin/pip install scikit-learn"),
    ("ModuleNotFoundError: No module named 'yaml'",
     "module yaml is missing: PyYAML, of the extra 'cli' (declared in pyproject.toml [cli])",
     "/opt/venv/bin/pip install '.[cli]'"),
    ("ImportError: libGL.so.1: cannot open shared object file: No such file or directory",
     "shared library libGL.so.1 is missing: apt libgl1",
     "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
     "--no-install-recommends libgl1"),
    ("src/x.c:1:10: fatal error: Python.h: No such file or directory",
     "header Python.h is missing: apt python3-dev",
     "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
     "--no-install-recommends python3-dev"),
    ("error: command 'x86_64-linux-gnu-gcc' failed: No such file or directory",
     "program gcc is missing: apt gcc libc6-dev",
     "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
     "--no-install-recommends gcc libc6-dev"),
    ("LookupError: setuptools-scm was unable to detect version for /workspace.",
     "program git is missing: apt git",
     "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
     "--no-install-recommends git"),
])
def test_a_failure_gets_its_repair(tmp_path: Path, output: str, problem: str,
                                   command: str) -> None:
    root = _project(tmp_path, {"pyproject.toml": EXTRAS_PYPROJECT, "mypkg/__init__.py": ""})
    survey = survey_repo(root, [])
    found = diagnose(output, survey, plan_setup(survey, set()), set())
    assert found is not None and found.problem == problem
    assert found.repair is not None and found.repair.command == command


def test_no_repair_for_own_modules_unknown_failures_or_a_repair_already_tried(
        tmp_path: Path) -> None:
    root = _project(tmp_path, {"pyproject.toml": EXTRAS_PYPROJECT, "mypkg/__init__.py": ""})
    survey = survey_repo(root, [])
    plan = plan_setup(survey, set())
    own = diagnose("ModuleNotFoundError: No module named 'mypkg.x'", survey, plan, set())
    assert own is not None and own.repair is None and "own module" in own.problem
    assert diagnose("AssertionError: loss is nan", survey, plan, set()) is None
    unknown = diagnose("libfoo.so.3: cannot open shared object file", survey, plan, set())
    assert unknown is not None and unknown.repair is None
    tried = {"/opt/venv/bin/pip install tensorboardX"}
    again = diagnose("ModuleNotFoundError: No module named 'tensorboardX'", survey, plan, tried)
    assert again is not None and again.repair is None and "already tried" in again.problem
    # the last failure in the output is the one repaired
    both = diagnose("No module named 'a'\nModuleNotFoundError: No module named 'a'\n"
                    "ImportError: libGL.so.1: cannot open shared object file", survey, plan,
                    set())
    assert both is not None and both.problem.startswith("shared library libGL.so.1")


def test_the_command_line_makes_the_auto_agent_with_its_budget() -> None:
    assert DEFAULT_REPAIR_BUDGET == DEFAULT_BUDGET
    agent = make_agent("auto", repair_budget=3)
    assert isinstance(agent, AutoAgent) and agent.describe()["repair_budget"] == 3
    with pytest.raises(UsageError, match="--repair-budget belongs"):
        make_agent("shell", repair_budget=2)
    with pytest.raises(UsageError, match="0 or more"):
        make_agent("auto", repair_budget=-1)


def test_auto_is_an_agent_of_the_bench_matrix_like_any_other() -> None:
    from synth.bench.matrix import AgentSpec, plan_cells

    spec = AgentSpec.parse("auto")
    assert (spec.name, spec.kind) == ("auto", "auto")
    cells = plan_cells([TASKS / "extras-only"], [spec, AgentSpec.parse("good")], 1)
    assert [(c.agent.name, c.script) for c in cells] == [
        ("auto", None), ("good", TASKS / "extras-only" / "agents" / "good.sh")]
