"""ResearchEnvBench (REB) interop, a plug-in: import REB's repositories as synth tasks
(:mod:`synth.plugins.reb.importer`, with REB's applicability from its categories file,
:mod:`synth.plugins.reb.categories`, and local mirrors checked complete,
:mod:`synth.plugins.reb.mirror`); REB's whole scripts folder and its remaining stages in
verify's probe containers, each level read as REB reads its stage file
(:mod:`synth.plugins.reb.probes`); REB's stage files, complete, and job folders
(:mod:`synth.plugins.reb.results`, :mod:`synth.plugins.reb.jobs`); REB's report path in the
session (:mod:`synth.plugins.reb.session`); the ``reb`` claims profile
(:mod:`synth.plugins.reb.profile`); ``verify --scoring reb`` and ``synth reb score``
(:mod:`synth.plugins.reb.scoring`, with REB's own C0 script run in the image by
:mod:`synth.plugins.reb.c0script`, else pyright by :mod:`synth.plugins.reb.pyright`); the
assets step (:mod:`synth.plugins.reb.assets`) and its offline cache
(:mod:`synth.plugins.reb.assets_fetch`, ``synth reb assets fetch``). See docs/bench.md,
"ResearchEnvBench mapping"."""
