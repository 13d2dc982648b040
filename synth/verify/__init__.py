"""``synth verify``: an artifact (or a run's export) in, a verdict out.

In: an artifact folder or a run directory, a runtime (the engine, or a host interpreter).
Out: the rebuilt image (built from scratch, :mod:`synth.verify.build`), the pyramid's
reports for the rebuilt image and the live one (:mod:`synth.pyramid`), fidelity between
them, and ``verify.json`` (:class:`synth.formats.verify.VerifyDocument`).
"""
