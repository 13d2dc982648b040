"""Running the fingerprint probe (:mod:`synth.formats.fingerprint`) in a runtime: an
image in a throwaway container with the network off, a live container, or the host.

Where two images' digests of a distribution differ at the same version, the probe is
asked once more (``--files``) for just those distributions' files
(:meth:`ImageProbe.with_dist_files`), so the comparison names each file that differs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from synth.engine.base import EXEC_KEEP_BYTES, ContainerSpec, Engine, Runtime
from synth.errors import SynthError, VerifyError
from synth.formats.fingerprint import Fingerprint
from synth.formats.limits import human
from synth.util.noise import SOURCE_CACHES

#: The probe script, shipped next to the other probes (stdlib-only, Python >= 3.8).
PROBE_PATH = Path(__file__).resolve().parent.parent / "pyramid" / "probes" / "fingerprint.py"
#: How long the probe may take (torch's ~700 MB site-packages hashes in about 1 s warm).
PROBE_TIMEOUT_S = 600


def fingerprint(runtime: Runtime, python: str, workdir: str = "/workspace") -> Fingerprint:
    """Run the fingerprint probe under ``python`` in ``runtime`` and parse what it printed."""
    return Fingerprint.from_json(_run_probe(
        runtime, python, ["--workdir", workdir,
                          "--skip-dirs", ",".join(sorted(SOURCE_CACHES))]))


def list_dist_files(runtime: Runtime, python: str,
                    names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The probe's ``--files`` answer: for each named distribution (canonical names) that
    imports resolve to, ``location``, ``metadata_dir``, ``digest`` and ``files`` (path
    relative to the site dir -> the digest it contributes to the distribution's digest)."""
    data = _run_probe(runtime, python, ["--files", ",".join(sorted(names))])
    return {str(k): dict(v) for k, v in dict(data.get("files") or {}).items()}


def _run_probe(runtime: Runtime, python: str, args: list[str]) -> dict[str, Any]:
    if not PROBE_PATH.is_file():
        raise VerifyError(f"The fingerprint probe {PROBE_PATH} is missing from this install.")
    tmp = f"/tmp/synth-fingerprint-{uuid.uuid4().hex[:12]}"
    runtime.copy_in(PROBE_PATH, tmp)
    try:
        result = runtime.exec([python, f"{tmp}/{PROBE_PATH.name}", *args],
                              timeout=PROBE_TIMEOUT_S)
    finally:
        runtime.exec(["rm", "-rf", tmp])
    if result.timed_out:
        raise VerifyError(
            f"The fingerprint probe timed out after {PROBE_TIMEOUT_S}s in {runtime.description}."
        )
    if not result.ok:
        raise VerifyError(
            f"The fingerprint probe failed under {python} in {runtime.description} "
            f"(exit {result.exit_code}): {result.stderr.strip()[-500:] or result.stdout[-500:]}",
            hint="Is the interpreter path right? The probe needs Python >= 3.8.",
        )
    if result.truncated:
        raise VerifyError(
            f"The fingerprint probe printed more than {human(EXEC_KEEP_BYTES)} in "
            f"{runtime.description}, more than synth reads: a file list or pyvenv.cfg in "
            "this environment is far larger than any environment's."
        )
    try:
        data = json.loads(result.stdout)
    except ValueError as exc:
        raise VerifyError(
            f"The fingerprint probe printed no JSON in {runtime.description}: "
            f"{result.stdout[:300]!r}"
        ) from exc
    if not isinstance(data, dict):
        raise VerifyError(f"The fingerprint probe printed {type(data).__name__}, not an object.")
    return data


def _probe_spec(image_ref: str, env: Mapping[str, str] | None = None) -> ContainerSpec:
    return ContainerSpec(image=image_ref, network=False, labels={"synth.kind": "fingerprint"},
                         env=dict(env or {}))


#: Prints {distribution: [required distribution, ...]} for one interpreter (stdlib only).
_REQUIREMENTS_PROBE = """\
import importlib.metadata as m, json, re
out = {}
for d in m.distributions():
    name = d.metadata["Name"]
    if not name:
        continue
    names = []
    for req in d.requires or []:
        if re.search(r"\\bextra\\s*==", req):
            continue
        found = re.match(r"\\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        if found:
            names.append(found.group(1))
    out[name] = sorted(set(names))
print(json.dumps(out, sort_keys=True))
"""


class ImageProbe:
    """Fingerprints of images, each taken in a throwaway container of ``engine``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def ping(self) -> None:
        self.engine.ping()

    def image_exists(self, ref: str) -> bool:
        return self.engine.image_exists(ref)

    def image_inspect(self, ref: str) -> dict[str, Any]:
        return self.engine.image_inspect(ref)

    def fingerprint(self, image_ref: str, python: str, workdir: str = "/workspace",
                    env: Mapping[str, str] | None = None) -> Fingerprint:
        """Fingerprint an image with the network off; ``env``: more variables for the
        container (a live image's persisted ones)."""
        with self.engine.container(_probe_spec(image_ref, env)) as container:
            return replace(fingerprint(container, python, workdir), origin=(image_ref, python))

    def requirements(self, image_ref: str, python: str) -> dict[str, list[str]]:
        """Each installed distribution's requirements by name (``Requires-Dist`` without
        those of its extras), from the image with the network off."""
        with self.engine.container(_probe_spec(image_ref)) as container:
            result = container.exec([python, "-c", _REQUIREMENTS_PROBE],
                                    timeout=PROBE_TIMEOUT_S)
        if not result.ok:
            raise VerifyError(f"Reading the requirements of {python} in {image_ref} failed "
                              f"(exit {result.exit_code}): {result.output.strip()[-300:]}")
        try:
            data = json.loads(result.stdout)
        except ValueError as exc:
            raise VerifyError(f"The requirements probe printed no JSON: "
                              f"{result.stdout[:200]!r}") from exc
        return {str(k): [str(r) for r in v] for k, v in data.items()}

    def with_dist_files(self, fp: Fingerprint, names: list[str]) -> Fingerprint:
        """``fp`` with ``names``' files; only those whose listed files give the digest the
        fingerprint recorded (the same files seen twice), the others named in the error."""
        if fp.origin is None:
            return replace(fp, dist_files_error="not an image: its files cannot be listed")
        image, python = fp.origin
        try:
            with self.engine.container(_probe_spec(image)) as container:
                listed = list_dist_files(container, python, names)
        except SynthError as exc:
            return replace(fp, dist_files_error=f"listing the files in {image} failed: "
                           f"{exc.message}")
        effective = fp.effective
        files = {n: {str(p): str(d) for p, d in dict(v.get("files") or {}).items()}
                 for n, v in listed.items()
                 if n in effective and v.get("digest") == effective[n].digest}
        unlisted = [n for n in names if n not in files]
        return replace(fp, dist_files=files, dist_files_error=(
            f"{', '.join(unlisted)}: the files listed in {image} do not give the "
            "fingerprint's digest" if unlisted else None))
