"""Render a :class:`BuildPlan` into the artifact's text files, with Jinja2 file templates.

Only ``templates/`` speaks Dockerfile. Templates use ``StrictUndefined`` (a missing variable
is an error, never an empty string) and keep trailing newlines. Everything rendered is a
pure function of the plan and the locks: no dates, sorted collections, the regenerating
command in each header.
"""

from __future__ import annotations

import contextlib
import functools
import json
import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from msgspec.structs import replace

from synth.config import CONTAINER_WHEELHOUSE
from synth.distill.carried import CARRIED_LATE_SUMS, CARRIED_SUMS, carried_sums
from synth.distill.load import repo_name
from synth.distill.project_locks import TOOL_LOCKS, LockCheck
from synth.engine.base_images import (
    DEFAULT_MIRROR,
    PYPI_LOCKS,
    TOOLS_VENV,
    pypi_digest,
    recipe_for,
)
from synth.engine.build import READER_BUILDS
from synth.errors import SynthError
from synth.export.apt_source import AptSources, apt_sources
from synth.export.build_lock import INSTALL_UV_SCRIPT, native_build_constraints
from synth.export.bundle import BUILD_VENDOR, describe
from synth.export.conda_lock import CONDA_INSTALL_SCRIPT, CONDA_INSTALLER_LOCK, conda_files
from synth.export.env_stage import STAGE, one_stage_reason, separate_env_stage
from synth.export.lock import Lock, render_lock
from synth.export.managed_python import INSTALL_MANAGED_PYTHON, managed_python_files
from synth.export.metadata import Publication, default_publication, oci_labels
from synth.formats.export_report import ExportReport, decision_counts
from synth.formats.manifest import BundleSummary
from synth.formats.plan import (
    MANAGED_PYTHON_LOCK,
    PLAN_FILE,
    BuildPlan,
    CommandOutcome,
    DistillReport,
    plan_file,
)
from synth.formats.task import load_task
from synth.util.atomic import dumps_plain_bytes
from synth.util.bundled import bundled_dir

#: Distributions that only exist for CUDA: an image with one of them wants a GPU.
_CUDA_NAME = re.compile(r"^(nvidia-|cupy-cuda|jax-cuda|torch-cuda)|(^|-)cu\d+$")
_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def templates_dir() -> Path:
    """``synth/templates`` in an installed wheel, else the repository's ``templates/``."""
    return bundled_dir("templates")


def shquote(word: str) -> str:
    return word if _SAFE.match(word) else shlex.quote(word)


def shjoin(argv: Iterable[str]) -> str:
    return " ".join(shquote(a) for a in argv)


def shvalue(value: str) -> str:
    """A value for ``NAME=value`` in a shell: ``$VAR`` references still expand."""
    if _SAFE.match(value) or re.match(r"^[A-Za-z0-9_@%+=:,./${}-]+$", value):
        return value
    if "$" in value:
        return '"' + re.sub(r'(["\\`])', r"\\\1", value) + '"'
    return shlex.quote(value)


def dockerenv(value: str) -> str:
    """A value for Dockerfile ``ENV NAME=value`` (``$VAR`` expands, as in the shell)."""
    if value and re.match(r"^[^\s\"'\\]+$", value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def mdcode(text: str) -> str:
    """Inline code in a Markdown table cell: one line, no pipes or backticks breaking it."""
    one = " ".join(text.split())
    if len(one) > 160:
        one = one[:157] + "..."
    return one.replace("|", "\\|").replace("`", "'")


_CELL_BREAKERS = re.compile(r"[|\r\n]")


def mdline(text: str) -> str:
    """Text from the run's files (names, versions, paths) in one Markdown line: a newline in
    it would start a line of its own, a forged list item or table row."""
    return " ".join(text.split()) if "\n" in text or "\r" in text else text


def mdcell(text: str) -> str:
    """Prose in a Markdown table cell (a decision's reason, which can quote names and
    versions from the run's files): one line, pipes escaped; as written when it has
    neither (the common case, checked once: every command of a long log has a row)."""
    if not _CELL_BREAKERS.search(text):
        return text
    return mdline(text).replace("|", "\\|")


def outcome_rows(outcomes: Iterable[CommandOutcome]) -> str:
    """The export report's table rows, ``| ref | `command` | reason |``, one per command:
    joined here rather than in a template loop, since a long log has 150,000 of them (and
    most share their command text and reason with another)."""
    code: dict[str, str] = {}
    cell: dict[str, str] = {}
    rows = []
    for o in outcomes:
        c = code.get(o.command)
        if c is None:
            c = code[o.command] = mdcode(o.command)
        r = cell.get(o.reason)
        if r is None:
            r = cell[o.reason] = mdcell(o.reason)
        rows.append(f"| {o.ref} | `{c}` | {r} |\n")
    return "".join(rows)


def wordlines(words: Iterable[str], width: int = 80) -> list[str]:
    """Words joined into lines of at most ``width`` characters (one long word: its own)."""
    lines: list[str] = []
    for w in words:
        if lines and len(lines[-1]) + 1 + len(w) <= width:
            lines[-1] += " " + w
        else:
            lines.append(w)
    return lines


class _TemplateCodeCache(jinja2.FileSystemBytecodeCache):
    """The templates' compiled code, kept between processes in Jinja's own folder for it
    (``_jinja2-cache-<uid>`` in the temp folder: the user's own, mode 0700, checked; each
    file keyed by the template's name and checked against its source): a new ``synth
    export`` reads the code of the artifact's templates instead of compiling them again,
    a fifteenth of a second. A cache that cannot be read or written is no cache, never an
    error."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)  # a file that is not one of Jinja's: a miss
        except OSError:  # a path that is not a folder, a file it cannot read
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def _code_cache() -> jinja2.BytecodeCache | None:
    try:
        return _TemplateCodeCache()
    except (OSError, RuntimeError):  # no temp folder, or one another user holds
        return None


@functools.cache
def environment() -> jinja2.Environment:
    """The templates' environment, one per process: Jinja compiles each template once per
    environment (or reads its code from :class:`_TemplateCodeCache`), and checks the
    file's modification time on every later use, so an edited template is read again."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        bytecode_cache=_code_cache(),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.filters.update(shjoin=shjoin, shquote=shquote, shvalue=shvalue, dockerenv=dockerenv,
                       mdcode=mdcode, mdcell=mdcell, mdline=mdline, outcome_rows=outcome_rows,
                       wordlines=wordlines, yaml_str=yaml_str, commented=commented,
                       json_argv=json_argv, dirname=posixpath.dirname,
                       basename=posixpath.basename, repo_name=repo_name)
    return env


def _render(name: str, values: Mapping[str, Any]) -> str:
    """Template ``name`` rendered with ``values``, as ``Template.render`` does, but with
    its context emptied afterwards. A template that defines macros makes a reference
    cycle (its context holds the macros and they hold it), so the values in that context,
    the run's whole distill report among them, would wait for the cyclic collector: on
    100,000 audited commands, a collection of 150,000 outcomes (0.3 s) at the end of an
    export. Emptied, they are freed as soon as the caller drops them."""
    env = environment()
    template = env.get_template(name)
    context = template.new_context(dict(values))
    try:
        return env.concat(template.root_render_func(context))
    except Exception:
        env.handle_exception()
    finally:
        context.vars.clear()
        context.parent.clear()


@dataclass(frozen=True)
class ReaderFacts:
    """What the artifact's reader needs from the task file: the task in a sentence and the
    command of its CPU check (C1), run in ``workdir``."""

    description: str = ""
    cpu_command: str | None = None
    workdir: str = "/workspace"


def reader_facts(task_file: str | Path | None) -> ReaderFacts:
    """The task file's facts, or none where it does not load (the README then says so)."""
    if not task_file:
        return ReaderFacts()
    try:
        task = load_task(Path(task_file))
    except (SynthError, OSError):
        return ReaderFacts()
    cpu = task.probes.cpu
    return ReaderFacts(description=" ".join(task.description.split()),
                       cpu_command=cpu.command if cpu else None, workdir=task.probes.workdir)


def uses_cuda(locks: Sequence[Lock]) -> bool:
    """True when the lock pins CUDA builds (``+cu121`` wheels, ``nvidia-*`` runtimes)."""
    return any(_CUDA_NAME.search(p.name.lower()) or re.search(r"\+cu\d+", p.version)
               for lk in locks for p in lk.pins)


def base_recipe(plan: BuildPlan, name: str | None = None) -> dict[str, str] | None:
    """How the base was made when synth made it (debootstrap + docker import), as commands
    a reader runs without synth, importing it as ``name`` (default: the plan's base); None
    for a base synth does not make."""
    recipe = recipe_for(plan.base_ref, DEFAULT_MIRROR)
    if recipe is None:
        return None
    include = f" --include={','.join(recipe.include)}" if recipe.include else ""
    pypi = ""
    if recipe.pypi:
        links = " ".join(PYPI_LOCKS[recipe.pypi])
        pypi = (f"# {recipe.pypi}.txt: synth's hashed lock (synth/engine/bases/, sha256 "
                f"{pypi_digest(recipe.pypi)})\n"
                f"cp /etc/resolv.conf rootfs/etc/resolv.conf\n"
                f"chroot rootfs python3 -m venv {TOOLS_VENV}\n"
                f"chroot rootfs {TOOLS_VENV}/bin/pip install --no-deps --require-hashes "
                f"--only-binary :all: -r /dev/stdin < {recipe.pypi}.txt\n"
                f"for c in {links}; do ln -s {TOOLS_VENV}/bin/$c rootfs/usr/local/bin/$c; done")
    return {"pypi": pypi,
        "synth": f"synth base bootstrap --tag {plan.base_ref}",
        "debootstrap": f"debootstrap --variant=minbase{include} {recipe.suite} rootfs "
                       f"{recipe.mirror}",
        "clean": "find rootfs/var/cache/apt/archives rootfs/var/lib/apt/lists -maxdepth 1 "
                 "-type f -delete",
        "import": f"tar --numeric-owner -C rootfs -c . | docker import - {name or plan.base_ref}",
    }


def wheel_rows(locks: Sequence[Lock]) -> list[dict[str, str]]:
    """Each wheelhouse wheel: file, pin, sha256 and where the run found it."""
    rows = []
    for lk in locks:
        links = [f"the author's wheelhouse (at {f} during the run)"
                 if f == CONTAINER_WHEELHOUSE else f for f in lk.env.find_links]
        where = "; ".join([*links, f"index {lk.env.index_url}"])
        for p in lk.pins:
            for f in p.wheel_files:
                rows.append({"file": f, "pin": f"{p.name}=={p.version}",
                             "sha256": " or ".join(p.hashes) or "(not recorded)",
                             "where": where})
    return sorted(rows, key=lambda r: r["file"])


def check_line(image: str, reader: ReaderFacts) -> str | None:
    """`docker run` of the CPU check as a reader types it: the command itself where the
    host shell passes it through unchanged, else inside ``bash -c '…'``."""
    cmd = reader.cpu_command
    if cmd is None:
        return None
    if re.search(r"[$`\\!*?~]|[<>|;&]", cmd):
        return f"docker run --rm -w {shquote(reader.workdir)} {image} bash -c {shlex.quote(cmd)}"
    return f"docker run --rm -w {shquote(reader.workdir)} {image} {cmd}"


def commented(line: str, note: str, width: int = 66) -> str:
    """A command with a short note after it (``   # note``), aligned."""
    return f"{line.ljust(width)}   # {note}"


def yaml_str(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def json_argv(argv: Sequence[str]) -> str:
    """A Dockerfile exec-form list (JSON), readable: no ``\u003c`` escapes."""
    return json.dumps(list(argv), ensure_ascii=False)


APT_DEBS_DIR = "/tmp/synth/debs"
#: The CA bundle as an optional BuildKit secret, and the variables that make pip, uv,
#: requests and git use it (never baked into a layer: docs/security.md).
CA_MOUNT = "--mount=type=secret,id=cacert,required=false"
CA_ENV = ("if [ -f /run/secrets/cacert ]; then export PIP_CERT=/run/secrets/cacert "
          "SSL_CERT_FILE=/run/secrets/cacert REQUESTS_CA_BUNDLE=/run/secrets/cacert "
          "GIT_SSL_CAINFO=/run/secrets/cacert; fi")


def render_apt_lock(plan: BuildPlan) -> str:
    """One line per package: ``name=version arch sha256 size mirror pool-path``.

    The fields after ``name=version`` come from apt's indexes in the live container; a
    package they did not describe has ``-`` there and is installed by version only."""
    lines = [
        f"# apt.lock for task {plan.task}: every Debian package the run added or changed "
        "against the base image.",
        f"# Regenerate: {plan.regenerate_command}",
        "# name=version architecture sha256 size mirror pool-path (- where apt's indexes in "
        "the run did not describe the package)",
    ]
    if plan.apt.timestamp:
        lines.append(f"# run ended: {plan.apt.timestamp} (the snapshot archive's timestamp)")
    debs = {d.name: d for d in plan.apt.debs}
    for name, version in plan.apt.pins:
        d = debs.get(name)
        lines.append(f"{name}={version} {d.arch or '-'} {d.sha256} {d.size} {d.mirror} "
                     f"{d.filename}" if d else f"{name}={version} - - - - -")
    lines += [f"# removed: {name}" for name in plan.apt.remove]
    return "\n".join(lines) + "\n"


def artifact_files_description(plan: BuildPlan, locks: Sequence[Lock],
                               bundled: bool = False,
                               publication: Publication | None = None) -> list[tuple[str, str]]:
    """Every file of the artifact (of its archive, with ``--archive``), with what it is: the
    README's table."""
    pub = publication or default_publication(plan)
    files = [
        ("Dockerfile", "the build: base, apt, Python lock, source, native builds, ENV"),
        ("Dockerfile.legacy", "the same steps for a builder without BuildKit (files copied "
         "in instead of mounted; no CA secret)"),
        (".dockerignore", "keeps the base's archive out of the build context"),
        ("README.md", "this file: how to load the base, build, run and verify"),
        ("apt.lock", "Debian packages: name=version, architecture, sha256, size, source URL"),
    ]
    files += [(lk.env.lock_file, f"pins with sha256 hashes for {lk.env.python}") for lk in locks]
    files += [(lk.build_file, f"hashed build requirements of what is built from source for "
                              f"{lk.env.python}") for lk in locks if lk.build]
    if any(lk.installer for lk in locks):
        files += [("installer.lock", "the uv that installs the locks, pinned with its hashes"),
                  (INSTALL_UV_SCRIPT, "unpacks installer.lock's uv for the build: the wheel "
                   "for the image's platform, sha256-checked, no pip")]
    files += [(c.lock_file, f"conda packages of {c.prefix}: @EXPLICIT url#sha256 lines "
               "(conda/mamba/micromamba --file)") for c in plan.conda]
    if plan.conda:
        files += [(CONDA_INSTALLER_LOCK, "the py-rattler that recreates the conda prefixes, "
                   "pinned with its hashes"),
                  (CONDA_INSTALL_SCRIPT, "recreates a conda prefix from its conda lock: "
                   "each archive fetched and checked, no solve")]
    if plan.pythons:
        files += [(MANAGED_PYTHON_LOCK, "the interpreters uv downloaded in the run (or "
                   "substituted for pyenv's builds): each archive's URL and sha256, and the "
                   "path it is unpacked at"),
                  (INSTALL_MANAGED_PYTHON, "unpacks them: each archive fetched (or taken from "
                   "the bundle) and checked")]
    files += [
        ("manifest.json", "sha256 of every file and of the run inputs; base image identity"),
        ("export-report.md", "what was kept, folded, dropped (with reasons) and unexplained"),
        ("export-report.json", "the export report, for machines"),
        (PLAN_FILE, "the build plan and distill report the other files were rendered from"),
        ("task.toml", "the task's probes, for `synth verify`"),
        ("CITATION.cff", "how to cite this environment (Citation File Format 1.2.0)"),
    ]
    files += _optional_files(plan, bundled, pub)
    return sorted(files)


def _optional_files(plan: BuildPlan, bundled: bool, pub: Publication) -> list[tuple[str, str]]:
    files = []
    if plan.apt.debs:
        files.append(("apt-fetch.sh", "fetches apt.lock's .debs by URL and checks their sha256"))
    if plan.claims:
        files.append(("claims.json", "the agent's self-report, checked by C5"))
    if plan.source.kind != "none":
        files.append(("source/", f"the research code, copied to {plan.source.dest}"))
    if plan.includes:
        files.append(("include/", "files carried along with --include"))
    if bundled:
        files.append(("vendor/", "every .deb, wheel, sdist and downloaded file the build "
                      "needs, hash-checked (export --bundle): it builds with no network"))
    if plan.source.patch:
        files.append((plan.source.patch, "the agent's edits to the research code, as a diff "
                      "from the repository's commit"))
    if plan.carried:
        files.append(("carried/", "files of installed distributions the agent modified"))
        files.append(("carried*.sha256", "their sha256, checked after they are put back"))
    if pub.base.archive:
        files.append((pub.base.archive, f"the base image {pub.base.ref} ({pub.base.digest}), "
                      "for `docker load` / `podman load`"))
    if pub.archive:
        files += [("sbom.cdx.json", "CycloneDX 1.6 SBOM: the base's and the added Debian "
                   "packages, every Python pin, what was built here"),
                  ("ro-crate-metadata.json", "RO-Crate metadata: every file with its sha256, "
                   "the licence, how it was made"),
                  (".zenodo.json", "deposit metadata for Zenodo")]
    if pub.verification:
        files.append(("verification.json", "the last `synth verify --rebuild` of this "
                      "artifact: levels, digests, when, on which machine"))
    return files


def reader_builds() -> list[dict[str, str | None]]:
    """One build command per builder a reader may have (synth.engine.build.READER_BUILDS)."""

    return [{"kind": kind, "who": who, "command": command, "cannot": cannot}
            for kind, (who, command, cannot) in READER_BUILDS.items()]


def render_artifact(plan: BuildPlan, report: DistillReport, locks: Sequence[Lock], *,
                    locker_command: str = "uv pip compile --generate-hashes --no-deps",
                    apt: AptSources | None = None,
                    reader: ReaderFacts | None = None,
                    bundle: dict[str, Any] | None = None,
                    py_source: Mapping[str, str] | None = None,
                    publication: Publication | None = None,
                    lock_checks: Sequence[LockCheck] = ()) -> dict[str, str | bytes]:
    """Every generated file of the artifact (not the manifest), by name: its text, or the
    bytes of the two JSON reports (:func:`report_files`), written as they are.

    ``bundle``: the vendored files' summary (synth.export.bundle) for ``export --bundle``: the
    Dockerfile then installs from ``vendor/`` only, with no network. ``py_source``: where
    the Python install takes packages from: ``{"kind": "index"}`` (the default: the lock's
    indexes) or ``{"kind": "vendor", "source": FOLDER-IN-CONTEXT, "dir": PATH-IN-BUILD}``
    (a folder of wheels and sdists, no network; the bundle's ``vendor/wheels``).
    ``publication``: the citation and how the base is named (synth.export.metadata); by
    default the plan's own, with no authors. ``lock_checks``: the project's own lock files
    against the environments they describe (the README says where one does not give its
    tool's environment)."""
    apt = apt or apt_sources(None, plan.apt.timestamp)
    reader = reader or ReaderFacts()
    ctx = _context(plan, report, locks, apt, reader, bundle, py_source,
                   publication or default_publication(plan, reader.description))
    # Where the project's own lock does not give the environment its tool installed.
    ctx["lock_disagrees"] = lock_disagrees(locks, lock_checks)
    files: dict[str, str | bytes] = {
        "Dockerfile": _render("Dockerfile.j2", {**ctx, "legacy": False}),
        "Dockerfile.legacy": _render("Dockerfile.j2", {**ctx, "legacy": True}),
        ".dockerignore": _render("dockerignore.j2", ctx),
        "README.md": _render("README.md.j2", ctx),
        "CITATION.cff": _render("CITATION.cff.j2", ctx),
        "export-report.md": _render("export-report.md.j2", ctx),
        **report_files(plan, report, bundle),
        "apt.lock": render_apt_lock(plan),
    }
    files.update(carried_files(plan))
    if plan.apt.debs:
        files["apt-fetch.sh"] = _render("apt-fetch.sh.j2", ctx)
    for lk in locks:
        header = [
            f"{lk.env.lock_file} for {lk.env.python} (task {plan.task}): exact pins with "
            "sha256 hashes; install with --require-hashes --no-deps.",
            f"Regenerate: {plan.regenerate_command}",
            f"Locked with: {locker_command if lk.locker == 'uv' else 'pip-compile'}",
        ]
        files[lk.env.lock_file] = render_lock(lk, header)
        if lk.build:
            files[lk.build_file] = render_build_lock(lk, plan)
    installer = next((lk for lk in locks if lk.installer), None)
    if installer is not None:
        files["installer.lock"] = render_installer_lock(installer, plan)
        files[INSTALL_UV_SCRIPT] = (templates_dir() / INSTALL_UV_SCRIPT).read_text(
            encoding="utf-8")
    files.update(conda_files(plan, locks, (templates_dir() / CONDA_INSTALL_SCRIPT).read_text(
        encoding="utf-8") if plan.conda else ""))
    files.update(managed_python_files(plan, (templates_dir() / INSTALL_MANAGED_PYTHON).read_text(
        encoding="utf-8") if plan.pythons else ""))
    return files


def carried_files(plan: BuildPlan) -> dict[str, str]:
    """``carried.sha256`` (put back after the lock) and ``carried-after-builds.sha256``."""
    files = {}
    early = [c for c in plan.carried if not c.after_builds]
    late = [c for c in plan.carried if c.after_builds]
    if early:
        files[CARRIED_SUMS] = carried_sums(early)
    if late:
        files[CARRIED_LATE_SUMS] = carried_sums(late)
    return files


def _context(plan: BuildPlan, report: DistillReport, locks: Sequence[Lock], apt: AptSources,
             reader: ReaderFacts, bundle: dict[str, Any] | None,
             py_source: Mapping[str, str] | None, publication: Publication) -> dict[str, Any]:
    """What the templates see."""
    if py_source is None and bundle is not None:
        py_source = {"kind": "vendor", "source": "vendor/wheels", "dir": f"{BUILD_VENDOR}/wheels"}
    wheel_files = sorted({f for lk in locks for f in lk.wheel_files})
    return {
        "reader": reader,
        "cuda": uses_cuda(locks),
        "base_recipe": base_recipe(plan, publication.base.ref),
        "wheels": wheel_rows(locks),
        "check_argv": ["bash", "-c", f"cd {shquote(reader.workdir)} && {reader.cpu_command}"]
        if reader.cpu_command else None,
        "check_line": check_line(f"{plan.task}:rebuilt", reader),
        "plan": plan,
        "report": report,
        "locks": locks,
        "wheel_files": wheel_files,
        "wheelhouse_dir": CONTAINER_WHEELHOUSE,
        "by_decision": by_decision(report.outcomes),
        "counts": decision_counts(report.outcomes),
        "artifact_ref": f"{plan.task}/{plan.run_id}",
        "files": artifact_files_description(plan, locks, bundled=bundle is not None,
                                            publication=publication),
        "citation": publication.citation,
        "base": publication.base,
        "labels": oci_labels(plan, publication.citation, publication.base),
        "builds": reader_builds(),
        "apt_sources": apt,
        "apt_debs_dir": APT_DEBS_DIR,
        "bundle": bundle,
        "bundle_line": describe(bundle) if bundle else "",
        "vendor_dir": BUILD_VENDOR,
        "py_source": py_source or {"kind": "index"},
        "native_build": native_build_constraints(plan, locks),
        # An isolated local build of a bundle takes its build requirements from the vendor.
        "offline_env": {"PIP_CONSTRAINT": "PIP_NO_INDEX=1 PIP_FIND_LINKS=",
                        "UV_BUILD_CONSTRAINT": "UV_OFFLINE=1 UV_NO_INDEX=1 UV_FIND_LINKS="},
        "conda_envs": {c.prefix: c for c in plan.conda},
        "env_stage": separate_env_stage(plan, locks),
        "env_stage_name": STAGE,
        "one_stage_reason": one_stage_reason(plan, locks),
        "conda_installer": next((lk.conda_installer for lk in locks if lk.conda_installer),
                                None),
        "ca_secret_mount": CA_MOUNT,
        "ca_secret_env": CA_ENV,
    }


def lock_disagrees(locks: Sequence[Lock], checks: Sequence[LockCheck]) -> dict[str, str]:
    """Prefix -> what differs, for each environment a project tool installed whose own
    lock file (in ``source/``) does not give it."""
    differs = {(c.name, c.prefix): c.shown() for c in checks if c.differs}
    return {lk.env.prefix: found for lk in locks if lk.env.project_install
            and (found := differs.get((TOOL_LOCKS[lk.env.project_install.tool],
                                       lk.env.prefix)))}


def by_decision(outcomes: Sequence[CommandOutcome]) -> dict[str, list[CommandOutcome]]:
    """The outcomes split by decision, in their order: the report's three tables, made in
    one pass instead of three filtered template loops over a long log's commands."""
    split: dict[str, list[CommandOutcome]] = {"kept": [], "folded": [], "dropped": []}
    for o in outcomes:
        split.setdefault(o.decision, []).append(o)
    return split


def render_installer_lock(lock: Lock, plan: BuildPlan) -> str:
    """uv's pin with its hashes: what the image installs its locks with."""
    assert lock.installer is not None
    pin = lock.installer
    header = [
        f"installer.lock (task {plan.task}): the uv that installs the Python locks, at the "
        "version that locked them;",
        f"{INSTALL_UV_SCRIPT} unpacks the wheel for the image's platform, checked against these "
        "hashes, into a throwaway folder of the build (no pip).",
        f"Regenerate: {plan.regenerate_command}",
    ]
    env = replace(lock.env, find_links=())
    return render_lock(Lock(env=env, pins=(pin,), locker=lock.locker), header)


def render_build_lock(lock: Lock, plan: BuildPlan) -> str:
    """The build constraints: hashed pins of every build requirement of the lock's sdists
    and of the isolated local builds (uv: --build-constraints --require-build-hashes)."""
    header = [
        f"{lock.build_file} for {lock.env.python} (task {plan.task}): the build "
        "requirements of what the rebuild builds from source,",
        "pinned with sha256 hashes (the lock's own versions where it has them); "
        "uv --build-constraints --require-build-hashes.",
        f"Sdists: {', '.join(lock.sdists) or 'none'} (isolated local builds use this file too).",
        f"Regenerate: {plan.regenerate_command}",
    ]
    return render_lock(Lock(env=lock.env, pins=lock.build, locker=lock.locker), header)


def report_files(plan: BuildPlan, report: DistillReport,
                 bundle: Mapping[str, Any] | None = None) -> dict[str, bytes]:
    """``export-report.json`` (every audited command's outcome) and ``plan.json`` (the plan,
    and the report without those outcomes: docs/formats.md), as the bytes of their files.
    Both are plain by their types (strings, integers, booleans, lists, string-keyed dicts:
    no float; tests/unit/test_plan_json.py checks the model's types)."""
    report_file = ExportReport.of(
        plan, report, BundleSummary.from_json(bundle) if bundle is not None else None)
    return {"export-report.json": dumps_plain_bytes(report_file.encodable()),
            PLAN_FILE: dumps_plain_bytes(plan_file(plan, report))}


def plan_json(plan: BuildPlan, report: DistillReport) -> str:
    """``synth export --plan``: the document of ``plan.json`` with the report's outcomes,
    since a dry run writes no ``export-report.json`` that would list them."""
    return dumps_plain_bytes(plan_file(plan, report, outcomes=True)).decode("utf-8")
