"""Every file synth reads or writes, one typed class and one reader each.

In: bytes on disk (a task file, a run directory's ``run.json``, ``audit.jsonl`` and
``state/*.json``, the agent's ``claims.json``, an artifact's ``manifest.json``,
``plan.json`` and ``export-report.json``, ``verify.json``). Out: frozen msgspec Structs,
decoded and checked in one pass (``RunRecord``, ``AuditLog``, ``PythonState``,
``BuildPlan``, ``Manifest``, ``VerifyDocument``…: one module per format, ``run.py``,
``audit.py``, ``state.py``, ``claims.py``, ``manifest.py``, ``plan.py``,
``export_report.py``, ``verify.py``), or one located ``InputFileError``/``TaskError``;
:mod:`.store` alone reads them. The JSON Schemas in ``schemas/`` are generated from these
types and published with the formats (docs/formats.md). Imports nothing but
:mod:`synth.errors`, the utilities and the pyramid's result types.
"""
