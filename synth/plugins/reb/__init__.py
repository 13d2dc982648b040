"""ResearchEnvBench (REB) interop, a plug-in: import REB's repositories as synth tasks
(:mod:`synth.plugins.reb.importer`), write/read REB-format stage results and job folders
(:mod:`synth.plugins.reb.results`), REB's report path in the session
(:mod:`synth.plugins.reb.session`), the ``reb`` claims profile
(:mod:`synth.plugins.reb.profile`), ``verify --scoring reb`` (:mod:`synth.plugins.reb.scoring`,
with pyright run in the image by :mod:`synth.plugins.reb.pyright`) and the assets step
(:mod:`synth.plugins.reb.assets`). See docs/bench.md, "ResearchEnvBench mapping"."""
