"""``synth bench``: tasks x agents x repeats, each cell run → export → rebuild → verify.

:mod:`synth.bench.matrix` plans the cells, :mod:`synth.bench.cell` runs one (anywhere: in a
local worker process or as a Ray task), :mod:`synth.bench.results` keeps the results folder
(``cells.jsonl`` appended one line per cell, resumable), :mod:`synth.bench.summary` and
:mod:`synth.bench.report` turn the lines into ``summary.json``/``summary.md`` and
``report.html``, :mod:`synth.bench.executors` dispatches the cells. See docs/bench.md.
"""
