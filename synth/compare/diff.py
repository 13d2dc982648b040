"""Compare two environments (runs, artifacts, images): pure functions over loaded data.

:mod:`synth.compare.load` reads runs, artifacts and images into :class:`Side` objects; this
module compares two of them section by section, most important first, and renders the
result for a terminal, as markdown, or as JSON (schema in docs/diff.md). Nothing here does
I/O, so every rule is unit-tested on synthetic sides.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.table import Table

from synth.compare.fingerprint import compare_fingerprints, explain_venv, files_text
from synth.formats.fingerprint import Fingerprint
from synth.formats.verify import Difference
from synth.util.text import printable

#: The JSON format of ``synth diff --json``; bumped on any incompatible change.
DIFF_FORMAT = 1

SideKind = Literal["run", "artifact", "image"]
#: "differ"/"equal": compared; "unavailable": one side (or both) lacks the data;
#: "info": shown but never part of equality (image size).
SectionStatus = Literal["equal", "differ", "unavailable", "info"]
ItemKind = Literal["added", "removed", "changed"]

#: Frameworks a native extension is compiled against; their versions are part of a build.
BUILD_AGAINST = ("torch", "numpy", "jax", "jaxlib", "tensorflow", "cupy", "cython", "pybind11")


def escape(text: object) -> str:
    """Untrusted text (paths, commands, values from the inputs) for a markup string: no
    markup, no control characters (synth.util.text)."""
    return _markup_escape(printable(text))


@dataclass(frozen=True)
class PyDist:
    """A Python distribution of the environment's primary interpreter."""

    name: str
    version: str | None
    #: "index", "wheelhouse", "local build", "editable", "vcs", "url", "local file",
    #: "setup.py install", "os package", "lock" (see synth.compare.fingerprint.distribution_source).
    source: str
    url: str | None = None


@dataclass(frozen=True)
class NativeBuildInfo:
    """One native build: what was compiled, how, with which environment, against what."""

    #: The distribution it installs (canonical name), else the build command's first words.
    key: str
    tool: str
    command: str
    cwd: str
    env: tuple[tuple[str, str], ...] = ()
    #: ``(name, version)`` of the frameworks present in the same interpreter.
    against: tuple[tuple[str, str], ...] = ()
    version: str | None = None


@dataclass(frozen=True)
class Side:
    """One thing being compared, as loaded; ``None`` fields are unknown for this kind."""

    kind: SideKind
    label: str
    identity: Mapping[str, Any] = field(default_factory=dict)
    #: Interpreter facts (``python``: version, ``path``, ``base_image``, ``glibc``).
    interpreter: Mapping[str, str] | None = None
    distributions: Mapping[str, PyDist] | None = None
    #: The conda packages of every prefix the agent made or changed (``<prefix> <name>`` ->
    #: ``<version> <build> (<channel>)``); None for an image.
    conda: Mapping[str, str] | None = None
    #: Debian packages added or changed against the base image (apt.lock's scope).
    apt_added: Mapping[str, str] | None = None
    #: Every Debian package (an image's dpkg database).
    apt_all: Mapping[str, str] | None = None
    env: Mapping[str, str] | None = None
    native_builds: tuple[NativeBuildInfo, ...] | None = None
    dockerfile: tuple[str, ...] | None = None
    #: target name ("live", "rebuilt", …) -> level -> status summary ("pass", "skipped: …").
    pyramid: Mapping[str, Mapping[str, str]] | None = None
    image_size: int | None = None
    fingerprint: Fingerprint | None = None
    warnings: tuple[str, ...] = ()
    #: The agent's claims.json, field by field (dotted keys, JSON values; ``claims.json``:
    #: ``present`` or ``absent``); None for an image.
    claims: Mapping[str, str] | None = None
    #: What the export report names: ``risk: …``, ``unaudited: …``, ``incomplete: …``.
    provenance: Mapping[str, str] | None = None
    #: Every pin of every lock file (``<file>: <name>`` -> version and hashes).
    locks: Mapping[str, str] | None = None
    #: The artifact's files by digest (manifest.json ``files``) and the run files it was
    #: made from (``inputs/<rel>``); for a run, its own run files' digests.
    files: Mapping[str, str] | None = None
    #: The run id the side comes from: sides of one run (the same id, or an artifact made
    #: from the same run files) are compared file by file; the files of two runs always
    #: differ (each rendered file names its run).
    origin: str | None = None

    def summary(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": self.label, "identity": dict(self.identity)}


#: One difference (the shared :class:`synth.formats.verify.Difference`).
Item = Difference


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    status: SectionStatus
    items: tuple[Item, ...] = ()
    note: str | None = None
    #: A unified diff (the Dockerfile section), one line per entry.
    unified: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        return {k: sum(1 for i in self.items if i.kind == k)
                for k in ("added", "removed", "changed")}

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "status": self.status,
                "note": self.note, "counts": self.counts(),
                "items": [i.to_json() for i in self.items], "unified": list(self.unified)}


@dataclass(frozen=True)
class DiffResult:
    a: Side
    b: Side
    sections: tuple[Section, ...]

    @property
    def equal(self) -> bool:
        return not any(s.status == "differ" for s in self.sections)

    @property
    def exit_code(self) -> int:
        return 0 if self.equal else 1

    def section(self, name: str) -> Section:
        return next(s for s in self.sections if s.name == name)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": DIFF_FORMAT,
            "equal": self.equal,
            "a": self.a.summary(),
            "b": self.b.summary(),
            "sections": [s.to_json() for s in self.sections],
            "warnings": [f"A: {w}" for w in self.a.warnings]
            + [f"B: {w}" for w in self.b.warnings],
        }


# ------------------------------------------------------------------------- comparing
def _compare_mapping(
    a: Mapping[str, str], b: Mapping[str, str], detail: Mapping[str, str] | None = None
) -> list[Item]:
    out: list[Item] = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if va == vb:
            continue
        kind: ItemKind = "added" if va is None else "removed" if vb is None else "changed"
        out.append(Item(kind, key, va, vb, (detail or {}).get(key, "")))
    return out


def _section(name: str, title: str, items: Sequence[Item], note: str | None = None,
             unified: Sequence[str] = ()) -> Section:
    return Section(name, title, "differ" if items else "equal", tuple(items), note,
                   tuple(unified))


def _unavailable(name: str, title: str, a: object, b: object, what: str,
                 hint: str = "") -> Section:
    missing = [s for s, v in (("A", a), ("B", b)) if v is None]
    note = f"no {what} for {' and '.join(missing)}" + (f"; {hint}" if hint else "")
    return Section(name, title, "unavailable", note=note)


def compare_pyramid(a: Side, b: Side) -> Section:
    title = "Pyramid results"
    if (a.pyramid is None) != (b.pyramid is None) and a.kind == b.kind:
        return _gap("pyramid", title, a, b, a.pyramid, b.pyramid, "verify.json")
    if a.pyramid is None or b.pyramid is None:
        return _unavailable("pyramid", title, a.pyramid, b.pyramid, "verify.json",
                            "run `synth verify` first")
    # Only targets verified on both sides compare (a live-only verification against one
    # with --rebuild is not a difference in the environments).
    common = sorted(set(a.pyramid) & set(b.pyramid))
    apart = "; ".join(
        f"only {side} verified {', '.join(sorted(set(mine) - set(other)))}"
        for side, mine, other in (("A", a.pyramid, b.pyramid), ("B", b.pyramid, a.pyramid))
        if set(mine) - set(other))
    if not common:
        return Section("pyramid", title, "unavailable",
                       note=f"no target verified on both sides ({apart})")
    flat_a = {f"{t} {lvl}": s for t in common for lvl, s in a.pyramid[t].items()}
    flat_b = {f"{t} {lvl}": s for t in common for lvl, s in b.pyramid[t].items()}
    items = _compare_mapping(flat_a, flat_b)
    notes = [apart] if apart else []
    if not items:  # say what both reached
        notes.insert(0, "; ".join(
            f"{t}: " + ", ".join(f"{lvl} {s.split(':', 1)[0]}"
                                 for lvl, s in sorted(a.pyramid[t].items()))
            for t in common))
    return _section("pyramid", title, items, note="; ".join(notes) or None)


def compare_interpreter(a: Side, b: Side) -> Section:
    title = "Interpreter and base"
    if a.interpreter is None or b.interpreter is None:
        return _unavailable("interpreter", title, a.interpreter, b.interpreter,
                            "interpreter facts")
    # Compare only the facts both sides know (an artifact does not know its glibc).
    keys = set(a.interpreter) & set(b.interpreter)
    return _section("interpreter", title, _compare_mapping(
        {k: v for k, v in a.interpreter.items() if k in keys},
        {k: v for k, v in b.interpreter.items() if k in keys},
    ))


def compare_distributions(a: Side, b: Side) -> Section:
    title = "Python distributions"
    if a.distributions is None or b.distributions is None:
        return _unavailable("python", title, a.distributions, b.distributions,
                            "Python distributions")
    items: list[Item] = []
    da, db = a.distributions, b.distributions
    for name in sorted(set(da) | set(db)):
        x, y = da.get(name), db.get(name)
        if y is None and x is not None:
            items.append(Item("removed", name, x.version, None, x.source))
        elif x is None and y is not None:
            items.append(Item("added", name, None, y.version, y.source))
        elif x is not None and y is not None and (x.version, x.source) != (y.version, y.source):
            src = x.source if x.source == y.source else f"{x.source} -> {y.source}"
            items.append(Item("changed", name, x.version, y.version, src))
    return _section("python", title, items)


def compare_conda(a: Side, b: Side) -> Section:
    """The conda packages of the prefixes the agent made or changed: version, build string
    and channel (a rebuilt build of the same version differs here)."""
    title = "Conda packages"
    if a.conda is None or b.conda is None:
        return _gap("conda", title, a, b, a.conda, b.conda, "conda packages")
    return _section("conda", title, _compare_mapping(a.conda, b.conda))


def conda_entry(version: str | None, build: str | None, channel: str | None) -> str:
    """One conda package as the conda section shows it."""
    return f"{version or '?'} {build or '?'} ({channel or 'no channel'})"


def _env_text(env: Iterable[tuple[str, str]]) -> str:
    return " ".join(f"{k}={v}" for k, v in env)


def compare_native_builds(a: Side, b: Side) -> Section:
    title = "Native builds"
    if a.native_builds is None or b.native_builds is None:
        return _unavailable("native_builds", title, a.native_builds, b.native_builds,
                            "build steps")
    ba = {n.key: n for n in a.native_builds}
    bb = {n.key: n for n in b.native_builds}
    items: list[Item] = []
    for key in sorted(set(ba) | set(bb)):
        x, y = ba.get(key), bb.get(key)
        if y is None and x is not None:
            items.append(Item("removed", key, x.command, None, _build_detail(x)))
        elif x is None and y is not None:
            items.append(Item("added", key, None, y.command, _build_detail(y)))
        elif x is not None and y is not None:
            parts = []
            if x.command != y.command or x.cwd != y.cwd:
                parts.append(f"command in {x.cwd} -> in {y.cwd}" if x.cwd != y.cwd
                             else "command")
            for k, va, vb in _pairs_diff(dict(x.env), dict(y.env)):
                parts.append(f"env {k}: {va or '(unset)'} -> {vb or '(unset)'}")
            for k, va, vb in _pairs_diff(dict(x.against), dict(y.against)):
                parts.append(f"against {k}: {va or '(absent)'} -> {vb or '(absent)'}")
            if x.version != y.version:
                parts.append(f"version {x.version} -> {y.version}")
            if parts:
                items.append(Item("changed", key, x.command, y.command, "; ".join(parts)))
    return _section("native_builds", title, items)


def _build_detail(n: NativeBuildInfo) -> str:
    bits = [f"{n.tool} in {n.cwd}"]
    if n.env:
        bits.append(f"env {_env_text(n.env)}")
    if n.against:
        bits.append("against " + ", ".join(f"{k} {v}" for k, v in n.against))
    return "; ".join(bits)


def _pairs_diff(a: Mapping[str, str], b: Mapping[str, str]) -> list[tuple[str, str | None,
                                                                           str | None]]:
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


_FP_HINT = "add --fingerprint, or compare images"


def compare_fingerprint_sections(a: Side, b: Side) -> list[Section]:
    """Native .so files and file contents, where both sides carry a fingerprint."""
    t_native, t_files = "Native files (.so, sha256)", "Installed files (per distribution)"
    if a.fingerprint is None or b.fingerprint is None:
        return [
            _unavailable("native_files", t_native, a.fingerprint, b.fingerprint,
                         "fingerprint", _FP_HINT),
            _unavailable("python_files", t_files, a.fingerprint, b.fingerprint,
                         "fingerprint", _FP_HINT),
        ]
    cmp = compare_fingerprints(a.fingerprint, b.fingerprint)
    native = [Item(_item_kind(c.kind), c.key, c.a, c.b, c.detail) for c in cmp.native]
    files = [item for c in cmp.content if c.kind in ("content", "metadata")
             for item in _content_items(c)]
    # Launcher scripts are written by the installer at install time (pip and uv write
    # different ones): named in the note, not counted as a difference of the files.
    scripts = sorted(f"{c.key} ({c.a} -> {c.b})" for c in cmp.content if c.kind == "scripts")
    # A venv's own files its maker writes (activation scripts, markers, pyvenv.cfg; uv's
    # empty .lock): named in the note, as verify explains them; anything else counts.
    made = cmp.venv_made
    tools = [c for c in cmp.venv if explain_venv(c, made)]
    notes = ([f"launcher scripts differ, written by another installer, not counted: "
              f"{', '.join(scripts)}"] if scripts else []) + (
        [f"the venv's own files differ as its makers write them, not counted: "
         f"{files_text(tools)}" + (f" (made by {made.a} vs {made.b})"
                                   if made and made.a != made.b else "")] if tools else [])
    note = "; ".join(notes) or None
    files += [Item(_item_kind(c.kind), c.key, c.a, c.b,
                   "; ".join(filter(None, ["not owned by any distribution", c.detail])))
              for c in cmp.unowned]
    files += [Item(_item_kind(c.kind), c.key, c.a, c.b, "the venv's own file")
              for c in cmp.venv if c not in tools]
    files += [Item("changed", c.key, c.a, c.b, c.detail) for c in cmp.patched]
    files += [Item(_item_kind(c.kind), f"{a.fingerprint.workdir}/{c.key}", c.a, c.b,
                   "working directory file") for c in cmp.workspace]
    return [_section("native_files", t_native, native),
            _section("python_files", t_files, files, note=note)]


def _content_items(c: Difference) -> list[Item]:
    """A distribution whose files differ at the same version: one item per differing file
    (``<distribution>: <path in site dir>``) where the files were listed, else one item."""
    if not c.files:
        return [Item("changed", c.key, c.a, c.b, c.detail)]
    return [Item(_item_kind(f.kind), f"{c.key}: {f.key}", f.a, f.b,
                 f"same version, other content ({c.a} -> {c.b})") for f in c.files]


def _item_kind(kind: str) -> ItemKind:
    return "added" if kind == "added" else "removed" if kind == "removed" else "changed"


def compare_apt(a: Side, b: Side) -> Section:
    title = "Debian packages"
    if a.apt_added is not None and b.apt_added is not None:
        return _section("apt", title, _compare_mapping(a.apt_added, b.apt_added),
                        note="added or changed against the base image")
    if a.apt_all is not None and b.apt_all is not None:
        return _section("apt", title, _compare_mapping(a.apt_all, b.apt_all),
                        note="every installed package")
    return Section("apt", title, "unavailable",
                   note="the two sides record Debian packages in different scopes "
                   "(added-to-base vs all) or not at all")


def compare_env(a: Side, b: Side) -> Section:
    title = "Environment variables"
    if a.env is None or b.env is None:
        return _unavailable("env", title, a.env, b.env, "environment")
    return _section("env", title, _compare_mapping(a.env, b.env))


def compare_dockerfile(a: Side, b: Side) -> Section:
    title = "Dockerfile steps"
    if a.dockerfile is None or b.dockerfile is None:
        return _unavailable("dockerfile", title, a.dockerfile, b.dockerfile, "Dockerfile")
    sa, sb = list(a.dockerfile), list(b.dockerfile)
    items: list[Item] = []
    matcher = difflib.SequenceMatcher(a=sa, b=sb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        olds, news = sa[i1:i2], sb[j1:j2]
        for k in range(max(len(olds), len(news))):
            old = olds[k] if k < len(olds) else None
            new = news[k] if k < len(news) else None
            kind: ItemKind = "changed" if old and new else "removed" if old else "added"
            pos = f"step {i1 + k + 1}" if old is not None else f"step {j1 + k + 1}"
            items.append(Item(kind, pos, old, new))
    unified = list(difflib.unified_diff(sa, sb, "A/Dockerfile", "B/Dockerfile", n=1,
                                        lineterm=""))
    return _section("dockerfile", title, items, unified=unified)


def _gap(name: str, title: str, a: Side, b: Side, va: object, vb: object,
         what: str) -> Section:
    """A section one side (or both) cannot fill: not compared, unless the sides are of one
    kind and only one lacks it (one artifact without its manifest): then a difference."""
    if (va is None) == (vb is None) or a.kind != b.kind:
        return _unavailable(name, title, va, vb, what)
    item = Item("removed" if vb is None else "added", what,
                "present" if va is not None else None, "present" if vb is not None else None)
    return Section(name, title, "differ", (item,), note=f"only one side has {what}")


def compare_claims(a: Side, b: Side) -> Section:
    """The agents' claims.json, field by field."""
    title = "Agent's claims (claims.json)"
    if a.claims is None or b.claims is None:
        return _gap("claims", title, a, b, a.claims, b.claims, "claims")
    return _section("claims", title, _compare_mapping(a.claims, b.claims))


def compare_provenance(a: Side, b: Side) -> Section:
    """The risks, unaudited changes and trust problems the export report names."""
    title = "Provenance (risks, unaudited changes)"
    if a.provenance is None or b.provenance is None:
        return _gap("provenance", title, a, b, a.provenance, b.provenance,
                    "a distill report")
    return _section("provenance", title, _compare_mapping(a.provenance, b.provenance))


def compare_locks(a: Side, b: Side) -> Section:
    """Every pin of every lock file with its hashes (apt.lock: the .deb's sha256)."""
    title = "Locks (pins and hashes)"
    if a.locks is None or b.locks is None:
        return _gap("locks", title, a, b, a.locks, b.locks, "lock files")
    return _section("locks", title, [_shown(i) for i in _compare_mapping(a.locks, b.locks)])


_DIGEST = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{52}\b")


def _short(text: str | None) -> str | None:
    """Each sha256 in ``text`` as its first 12 digits (compared whole, shown short)."""
    return None if text is None else _DIGEST.sub(r"\1…", text)


def _shown(item: Item) -> Item:
    detail = item.detail
    if item.kind == "changed" and item.a and item.b and \
            item.a.split()[0] == item.b.split()[0]:
        detail = "same version, other hashes"
    return Item(item.kind, item.key, _short(item.a), _short(item.b), detail)


def compare_files(a: Side, b: Side) -> Section:
    """The files each side carries, by digest: an artifact's manifest.json ``files`` and
    the run files it was made from (``inputs/…``); a run's own run files. Sides from one
    run must match file for file (export is deterministic); sides from two runs always
    differ here (every rendered file names its run), so that is shown, not counted."""
    title = "Files (manifest.json, run files)"
    if a.files is None or b.files is None:
        return _gap("files", title, a, b, a.files, b.files, "a manifest")
    if a.kind != b.kind:  # a run against an artifact: the run files it was made from
        fa = {k: v for k, v in a.files.items() if k.startswith("inputs/")}
        fb = {k: v for k, v in b.files.items() if k.startswith("inputs/")}
    else:
        fa, fb = dict(a.files), dict(b.files)
    items = [_shown(i) for i in _compare_mapping(fa, fb)]
    inputs_a = {k: v for k, v in a.files.items() if k.startswith("inputs/")}
    inputs_b = {k: v for k, v in b.files.items() if k.startswith("inputs/")}
    if a.origin != b.origin and not (inputs_a and inputs_a == inputs_b):
        return Section("files", title, "info", tuple(items),
                       note=f"from two runs ({a.origin} and {b.origin}): shown, not counted; "
                       "the sections above compare their content")
    return _section("files", title, items)


def compare_image_size(a: Side, b: Side) -> Section:
    title = "Image size"
    if a.image_size is None or b.image_size is None:
        return _unavailable("image_size", title, a.image_size, b.image_size, "image size")
    items = []
    if a.image_size != b.image_size:
        delta = b.image_size - a.image_size
        items.append(Item("changed", "size", human_size(a.image_size), human_size(b.image_size),
                          f"{'+' if delta > 0 else '-'}{human_size(abs(delta))}"))
    return Section("image_size", title, "info", tuple(items),
                   note="shown for information; never part of equality")


def diff_sides(a: Side, b: Side) -> DiffResult:
    """Every section, most important first (the order of docs/diff.md)."""
    fp_native, fp_files = compare_fingerprint_sections(a, b)
    sections = (
        compare_pyramid(a, b),
        compare_claims(a, b),
        compare_provenance(a, b),
        compare_interpreter(a, b),
        compare_distributions(a, b),
        compare_conda(a, b),
        compare_native_builds(a, b),
        fp_native,
        fp_files,
        compare_apt(a, b),
        compare_locks(a, b),
        compare_env(a, b),
        compare_dockerfile(a, b),
        compare_files(a, b),
        compare_image_size(a, b),
    )
    return DiffResult(a, b, sections)


def human_size(n: int) -> str:
    """Bytes in kB below 1 MB, else in MB (one decimal): sizes a few MB apart stay apart."""
    if n < 1000:
        return f"{n} B"
    if n < 1_000_000:
        return f"{n / 1000:.1f} kB"
    return f"{n / 1_000_000:.1f} MB"


# ------------------------------------------------------------------------- rendering
_MARK = {"added": "+", "removed": "-", "changed": "~"}
_STYLE = {"added": "green", "removed": "red", "changed": "yellow"}


def _value(item: Item) -> str:
    if item.kind == "added":
        return item.b or ""
    if item.kind == "removed":
        return item.a or ""
    return f"{item.a} -> {item.b}" if item.a != item.b else (item.a or "")


#: Items shown per section in a terminal; --md and --json always carry all of them.
TERMINAL_ITEMS = 40


def render_terminal(result: DiffResult, console: Console, *, limit: int = TERMINAL_ITEMS) -> None:
    """Grouped by kind, most important first; equal and unavailable sections are one line."""
    a, b = result.a, result.b
    console.print(f"[bold]A[/] {escape(a.kind)} {escape(a.label)}")
    console.print(f"[bold]B[/] {escape(b.kind)} {escape(b.label)}")
    for s in result.sections:
        counts = s.counts()
        head = f"[bold]{escape(s.title)}[/]"
        if s.status == "equal":
            console.print(f"{head}: [green]equal[/]"
                          + (f" [dim]({escape(s.note)})[/]" if s.note else ""))
            continue
        if s.status == "unavailable":
            console.print(f"{head}: [dim]not compared ({escape(s.note or '')})[/]")
            continue
        if s.status == "info" and not s.items:
            console.print(f"{head}: [green]equal[/]")
            continue
        summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
        console.print(f"{head}: [yellow]{summary}[/]"
                      + (f" [dim]({escape(s.note)})[/]" if s.note else ""))
        if s.name == "dockerfile":
            for item in s.items[:limit]:
                for style, line in dockerfile_item_lines(item):
                    console.print(f"  [{style}]{escape(line)}[/]" if style
                                  else f"  {escape(line)}", soft_wrap=True)
            continue
        table = Table(show_header=False, box=None, padding=(0, 1), pad_edge=False)
        table.add_column(width=1)
        table.add_column(overflow="fold")
        table.add_column(overflow="fold")
        table.add_column(style="dim", overflow="fold")
        for item in s.items[:limit]:
            table.add_row(f"[{_STYLE[item.kind]}]{_MARK[item.kind]}[/]", escape(item.key),
                          escape(_value(item)), escape(item.detail))
        console.print(table)
        if len(s.items) > limit:
            console.print(f"  [dim]… and {len(s.items) - limit} more (all of them with --md "
                          "or --json)[/]")
    warnings = [f"A: {w}" for w in a.warnings] + [f"B: {w}" for w in b.warnings]
    for w in warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    console.print("[bold green]equal[/]" if result.equal else "[bold yellow]differ[/]")


#: Steps longer than this are shown as the words that changed, not as whole lines.
LONG_STEP = 160


def token_changes(old: str, new: str) -> tuple[list[str], list[str]]:
    """Words removed from and added to a step (an apt list, a pip command line)."""
    a, b = old.split(), new.split()
    removed: list[str] = []
    added: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            removed += a[i1:i2]
        if op in ("replace", "insert"):
            added += b[j1:j2]
    return removed, added


def _clip(text: str, width: int = LONG_STEP) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _words(words: list[str], shown: int = 12) -> str:
    more = f" (and {len(words) - shown} more)" if len(words) > shown else ""
    return " ".join(words[:shown]) + more


def dockerfile_item_lines(item: Item) -> list[tuple[str, str]]:
    """(style, text) lines for one Dockerfile step difference in a terminal."""
    head = ("green", f"+ {item.key}: ") if item.kind == "added" else (
        ("red", f"- {item.key}: ") if item.kind == "removed" else ("yellow", f"~ {item.key}: "))
    if item.kind != "changed" or item.a is None or item.b is None:
        return [(head[0], head[1] + _clip(item.b or item.a or ""))]
    if len(item.a) <= LONG_STEP and len(item.b) <= LONG_STEP:
        return [(head[0], f"~ {item.key}:"), ("red", f"    - {item.a}"),
                ("green", f"    + {item.b}")]
    removed, added = token_changes(item.a, item.b)
    lines = [(head[0], head[1] + _clip(item.b, 60))]
    if added:
        lines.append(("green", f"    + {_words(added)}"))
    if removed:
        lines.append(("red", f"    - {_words(removed)}"))
    return lines


def _md_cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def render_markdown(result: DiffResult) -> str:
    a, b = result.a, result.b
    lines = [
        f"# synth diff: {'equal' if result.equal else 'differ'}",
        "",
        f"- **A** ({a.kind}): `{a.label}`",
        f"- **B** ({b.kind}): `{b.label}`",
        "",
    ]
    for s in result.sections:
        if s.status in ("equal", "unavailable") or (s.status == "info" and not s.items):
            word = f"not compared ({s.note})" if s.status == "unavailable" else (
                f"equal ({s.note})" if s.note else "equal")
            lines += [f"## {s.title}: {word}", ""]
            continue
        summary = ", ".join(f"{n} {k}" for k, n in s.counts().items() if n)
        lines += [f"## {s.title}: {summary}", ""]
        if s.note:
            lines += [f"_{s.note}_", ""]
        if s.name == "dockerfile" and s.unified:
            lines += ["```diff", *s.unified, "```", ""]
            continue
        lines += ["| | name | A | B | detail |", "|---|---|---|---|---|"]
        for i in s.items:
            lines.append(f"| {_MARK[i.kind]} | {_md_cell(i.key)} | {_md_cell(i.a)} "
                         f"| {_md_cell(i.b)} | {_md_cell(i.detail)} |")
        lines.append("")
    warnings = [f"A: {w}" for w in a.warnings] + [f"B: {w}" for w in b.warnings]
    if warnings:
        lines += ["## Warnings", "", *(f"- {w}" for w in warnings), ""]
    return "\n".join(lines)


# ------------------------------------------------------------------ Dockerfile steps
def dockerfile_steps(text: str) -> tuple[str, ...]:
    """Logical instructions of a Dockerfile: continuations joined, comments dropped."""
    steps: list[str] = []
    current: list[str] = []
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            current.append(stripped[:-1].strip())
            continue
        current.append(stripped)
        steps.append(" ".join(p for p in current if p))
        current = []
    if current:
        steps.append(" ".join(p for p in current if p))
    return tuple(steps)
