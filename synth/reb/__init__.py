"""ResearchEnvBench (REB) interop: import REB's repositories as synth tasks
(:mod:`synth.reb.importer`), write/read REB-format stage results and job folders
(:mod:`synth.reb.results`), REB's report path in the session (:mod:`synth.reb.session`),
the ``reb`` claims profile (:mod:`synth.reb.profile`), ``verify --scoring reb``
(:mod:`synth.reb.scoring`, with pyright run in the image by :mod:`synth.reb.pyright`) and
the assets step (:mod:`synth.reb.assets`). See docs/bench.md, "ResearchEnvBench mapping"."""
