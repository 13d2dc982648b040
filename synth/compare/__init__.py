"""Comparisons: environment fingerprints and ``synth diff``.

In: loaded runs, artifacts and fingerprints (typed objects of :mod:`synth.formats`).
Out: differences, each with a section, a key and both sides, and whether each is explained.
Export (carried files), verify (fidelity) and ``synth diff`` share these rules.
"""
