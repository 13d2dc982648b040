"""``synth export``: a run directory in, an artifact folder out.

In: a recorded run (:mod:`synth.formats`), the live image's final facts (one container on
it), the package indexes (the lock). Out: the artifact folder — ``Dockerfile``, locks,
``source/`` with ``source.patch``, ``plan.json``, ``manifest.json``, the export report —
and on request a bundle (``vendor/``), an SBOM, an RO-Crate and a deterministic archive.
The plan comes from :mod:`synth.distill` (pure); only the templates speak Dockerfile.
"""
