"""ResearchEnvBench (REB) interop: import REB's repositories as synth tasks
(:mod:`synth.reb.importer`) and write/read REB-format stage results
(:mod:`synth.reb.results`). See docs/bench.md, "REB mapping"."""
