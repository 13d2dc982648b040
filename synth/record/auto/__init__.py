"""``synth run --agent auto``: synth's own rule-based setup agent (:mod:`.agent`).

:mod:`.survey` reads what the repository declares, :mod:`.plan` turns it into statements,
:mod:`.repair` maps a failure's output to the statement that fixes it; all three are pure.
"""
