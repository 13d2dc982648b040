"""What an artifact says about itself to those who cite, curate and rebuild it.

:class:`Citation` is who made the environment and what it is: authors (``--author``, else
the task's ``[citation] authors``, else the exporting user's ``git config --global``
``user.name``/``user.email``), version (``--release``, else the run id), the date (the
run's end, SOURCE_DATE_EPOCH), licence (``--license``, else the task's; an SPDX id),
repository (``--repository-url``, the task's ``[citation] repository`` or its git URL) and
commit. ``CITATION.cff``, ``.zenodo.json``, the RO-Crate and the image's OCI labels are all
made from it. :class:`BaseFacts` is the base as the artifact names it: a synth base under
``localhost/synth/…`` with its published digest (synth.engine.base_images), else the
registry image by digest. Pure, but for :func:`git_author`.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from synth.distill.load import LoadedRun
from synth.engine.base_images import PublishedBase, published_base
from synth.engine.image_archive import oci_arch
from synth.errors import SynthError, UsageError
from synth.formats.plan import BuildPlan
from synth.formats.task import load_task
from synth.util.urls import without_credentials

_EMAIL = re.compile(r"^(?P<name>[^<>]*?)\s*<(?P<email>[^<>\s]+@[^<>\s]+)>$")
#: Labels the base may carry that describe synth's bookkeeping, not the image: an artifact
#: built on a base that has them sets them empty (it cannot remove a label).
INTERNAL_LABEL = re.compile(r"^synth\.")


@dataclass(frozen=True)
class Author:
    """A person: ``given`` and ``family`` names where the text says them apart."""

    name: str
    given: str | None = None
    family: str | None = None
    email: str | None = None

    def cff(self) -> dict[str, str]:
        """A CITATION.cff ``authors`` entry (a person, else an entity ``name``)."""
        entry = ({"family-names": self.family, "given-names": self.given}
                 if self.family and self.given else {"name": self.name})
        return {**entry, **({"email": self.email} if self.email else {})}

    @property
    def inverted(self) -> str:
        """``Family, Given`` (Zenodo's creators), or the name as given."""
        return f"{self.family}, {self.given}" if self.family and self.given else self.name


def parse_author(text: str) -> Author:
    """``"Given Family <email>"``, ``"Family, Given"``, or a single name (an entity)."""
    text = " ".join(text.split())
    email = None
    if m := _EMAIL.match(text):
        text, email = m["name"], m["email"]
    if not text or any(c in text for c in "<>\"\\"):
        raise UsageError(f"--author {text!r}: give `Given Family <email>` or `Family, Given`.")
    if "," in text:
        family, _, given = (p.strip() for p in text.partition(","))
        return Author(f"{given} {family}".strip(), given or None, family or None, email)
    words = text.split(" ")
    if len(words) > 1:
        return Author(text, " ".join(words[:-1]), words[-1], email)
    return Author(text, email=email)


def spdx_id(text: str, source: str = "--license") -> str:
    """The SPDX licence id ``text`` (given by ``source``: the flag, or the task file's
    ``citation.license``) names, case as SPDX writes it, or a usage error: CITATION.cff and
    .zenodo.json take a listed id only."""
    from cyclonedx.spdx import fixup_id

    fixed = fixup_id(text.strip())
    if fixed is None:
        custom = text.strip().startswith("LicenseRef-")
        raise UsageError(
            f"{source} {text!r} is not an SPDX licence id"
            + (" of the SPDX list (a LicenseRef-… is not, and CITATION.cff and .zenodo.json "
               "take a listed id only)." if custom else "."),
            hint=("leave the licence out (the research code's own LICENSE file travels in "
                  "source/) or give a listed id" if custom else "e.g.")
            + " MIT, Apache-2.0, BSD-3-Clause, GPL-3.0-or-later, CC-BY-4.0 "
            "(https://spdx.org/licenses/).")
    return str(fixed)


def git_author() -> Author | None:
    """The exporting user's ``git config --global`` name and email, if set (the user's own
    configuration only: never a repository's, which is the repository's code)."""
    def get(key: str) -> str | None:
        try:
            out = subprocess.run(["git", "config", "--global", "--get", key], cwd="/",
                                 capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() or None if out.returncode == 0 else None

    name = get("user.name")
    if not name:
        return None
    email = get("user.email")
    try:
        return parse_author(f"{name} <{email}>" if email and "@" in email else name)
    except UsageError:
        return None


@dataclass(frozen=True)
class CitationOptions:
    """The export flags that say who made the artifact and how it is published."""

    authors: tuple[str, ...] = ()
    license: str | None = None
    release: str | None = None
    repository: str | None = None


@dataclass(frozen=True)
class TaskCitation:
    """The task file's facts for citing: its ``[citation]`` table and description."""

    authors: tuple[str, ...] = ()
    license: str | None = None
    repository: str | None = None
    description: str = ""


@dataclass(frozen=True)
class Citation:
    """Who made the environment and what it is; see the module docstring."""

    title: str
    abstract: str
    authors: tuple[Author, ...]
    #: Where the authors came from: ``--author``, ``task.toml``, ``git config`` or ``none``.
    authors_from: str
    version: str
    #: The run's end: ``YYYY-MM-DD`` and the full ISO 8601 time.
    date: str
    created: str
    license: str | None
    repository: str | None
    commit: str | None
    keywords: tuple[str, ...]

    @property
    def repository_url(self) -> str | None:
        """The repository where it is a web address (CITATION.cff's ``repository-code``
        must be one; an ``ssh`` git remote is not)."""
        ok = self.repository and re.match(r"^(https?|s?ftp)://\S+$", self.repository)
        return self.repository if ok else None

    def warnings(self) -> list[str]:
        out = []
        if not self.authors:
            out.append("CITATION.cff and .zenodo.json name no author: pass --author "
                       "'Given Family <email>', or set [citation] authors in task.toml or "
                       "git config --global user.name")
        if self.license is None:
            out.append("no licence given (--license SPDX-ID, or [citation] license in "
                       "task.toml): the citation and the image carry none, and .zenodo.json "
                       "asks for closed access")
        return out


def citation_for(plan: BuildPlan, task: TaskCitation, options: CitationOptions,
                 epoch: int, git: Author | None) -> Citation:
    """The artifact's citation from the flags, the task file and the user's git config."""
    if options.authors:
        authors, source = tuple(parse_author(a) for a in options.authors), "--author"
    elif task.authors:
        authors, source = tuple(parse_author(a) for a in task.authors), "task.toml"
    elif git is not None:
        authors, source = (git,), "git config"
    else:
        authors, source = (), "none"
    licence = options.license or task.license
    licence_from = "--license" if options.license else "task.toml citation.license"
    when = datetime.fromtimestamp(epoch, UTC)
    return Citation(
        title=f"{plan.task}: rebuildable research environment",
        abstract=task.description or (f"The software environment of task {plan.task}, "
                                      f"distilled by synth from run {plan.run_id}."),
        authors=authors, authors_from=source, version=options.release or plan.run_id,
        date=when.strftime("%Y-%m-%d"), created=when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        license=spdx_id(licence, licence_from) if licence else None,
        repository=_public(options.repository or task.repository or plan.source.url),
        commit=plan.source.commit,
        keywords=("reproducibility", "docker", "research software", plan.task))


def _public(url: str | None) -> str | None:
    return without_credentials(url) if url else url


# ------------------------------------------------------------------------------ base

@dataclass(frozen=True)
class BaseFacts:
    """The base as the artifact names it. ``ref``: what ``FROM`` says; ``digest``: the
    published base's config digest (the image ID once loaded) or the registry's manifest
    digest; ``published``: how a synth base is published (None for a registry image);
    ``archive``: the artifact's ``base/…`` file when it carries the base; ``inherited``:
    synth's labels of a base that is not published, which the image sets empty."""

    ref: str
    digest: str | None
    published: PublishedBase | None = None
    archive: str | None = None
    inherited: tuple[str, ...] = ()
    #: The carried archive's OCI manifest digest (the ID Docker's containerd store shows).
    manifest_digest: str | None = None

    @property
    def pinned(self) -> bool:
        """FROM names the registry image by digest."""
        return self.published is None and self.digest is not None


def base_archive_name(published: PublishedBase) -> str:
    """``base/synth-python-bookworm.tar``: where an artifact carries its base."""
    name = published.ref.removeprefix("localhost/").replace("/", "-").replace(":", "-")
    return f"base/{name}.tar"


def run_architecture(run: LoadedRun, machine: str) -> str:
    """The base's architecture: the run's .debs say it; else this machine's."""
    arches = sorted({d.arch for d in (run.apt.debs or {}).values() if d.arch and d.arch != "all"})
    return arches[0] if arches else oci_arch(machine)


def base_facts(plan: BuildPlan, run: LoadedRun, machine: str, *, carried: bool) -> BaseFacts:
    """How the artifact names its base (``carried``: it holds the published base's archive)."""
    info = run.info
    published = published_base(plan.base_ref, info.base_rootfs, info.base_labels,
                               run_architecture(run, machine)) if not plan.base_digest else None
    if published is not None:
        return BaseFacts(published.ref, published.digest, published,
                         base_archive_name(published) if carried else None)
    inherited = tuple(sorted(k for k in info.base_labels if INTERNAL_LABEL.match(k)))
    return BaseFacts(plan.base_ref, plan.base_digest, inherited=inherited)


def oci_labels(plan: BuildPlan, citation: Citation, base: BaseFacts) -> list[tuple[str, str]]:
    """The image's ``org.opencontainers.image.*`` labels (those known), sorted by key."""
    labels = {
        "title": plan.task, "description": citation.abstract, "version": citation.version,
        "created": citation.created, "source": citation.repository,
        "revision": citation.commit, "licenses": citation.license,
        "authors": ", ".join(a.name for a in citation.authors) or None,
        "base.name": base.ref, "base.digest": base.digest,
    }
    return sorted((f"org.opencontainers.image.{k}", v) for k, v in labels.items() if v)


# ---------------------------------------------------------------- what render is given

@dataclass(frozen=True)
class Publication:
    """What the artifact says about itself (README, CITATION.cff, labels, base) and which
    publishing files it holds: ``archive`` (--archive: SBOM, RO-Crate, .zenodo.json) and
    ``verification`` (a verification.json kept from the artifact it replaced)."""

    citation: Citation
    base: BaseFacts
    archive: bool = False
    verification: bool = False


def epoch_of(timestamp: str | None) -> int:
    """``20261129T101640Z`` (the plan's apt snapshot time, the run's end) -> seconds."""
    if not timestamp:
        return 0
    try:
        return int(datetime.strptime(timestamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
                   .timestamp())
    except ValueError:
        return 0


def default_publication(plan: BuildPlan, description: str = "") -> Publication:
    """For a plan rendered on its own (no run): no authors, the base as the plan names it."""
    citation = citation_for(plan, TaskCitation(description=description), CitationOptions(),
                            epoch_of(plan.apt.timestamp), None)
    return Publication(citation, BaseFacts(plan.base_ref, plan.base_digest))


def task_citation(task_file: str | None) -> TaskCitation:
    """The task file's ``[citation]`` and description, or nothing where it does not load."""
    if not task_file:
        return TaskCitation()
    try:
        task = load_task(Path(task_file))
    except (SynthError, OSError):
        return TaskCitation()
    c = task.citation
    return TaskCitation(authors=tuple(c.authors), license=c.license,
                        repository=c.repository or task.repo.url,
                        description=" ".join(task.description.split()))


def make_citation(plan: BuildPlan, run: LoadedRun, options: CitationOptions,
                  epoch: int) -> Citation:
    """The run's citation: the flags, then the task file, then the user's git config."""
    task = task_citation(run.info.task_file)
    git = None if options.authors or task.authors else git_author()
    return citation_for(plan, task, options, epoch, git)
