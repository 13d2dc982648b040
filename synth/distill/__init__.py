"""Distillation, pure: a recorded run in, a frozen plan out.

In: a :class:`~synth.distill.load.LoadedRun` (the run's audit log and final state, read by
:mod:`synth.formats`). Out: ``(BuildPlan, DistillReport)`` — what to build (apt pins, Python
environments, native steps in their order, the environment, the source) and how every
audited command was decided. No engine, no network, no files written: the same run gives
the same plan, which :mod:`synth.export` locks and renders.
"""
