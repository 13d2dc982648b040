"""Every file synth reads or writes, one typed class and one reader each.

In: bytes on disk (a task file, a run directory's ``run.json``, ``audit.jsonl`` and
``state/*.json``, the agent's ``claims.json``, an artifact's ``manifest.json`` and
``plan.json``, ``verify.json``). Out: frozen, validated objects (``RunRecord``,
``AuditLog``, ``PythonState``, ``BuildPlan``, ``Manifest``, ``VerifyDocument``…), or one
located ``InputFileError``/``TaskError``. The JSON Schemas in ``schemas/`` are published
with the formats (docs/formats.md). Imports nothing but :mod:`synth.errors`, the utilities
and the pyramid's result types.
"""
