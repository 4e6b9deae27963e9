"""The pipeline driven end to end, without a screen.

``analysis`` is the post-mortem run (``report``): every event read, the rules evaluated on a
fixed grid. ``live`` is the watch/replay session the dashboard and headless mode drive, made
of small parts: the ingest hand-over, the clocks, the replay buffer, the snapshot builder.
``rule_cases`` turns the log input of a rule test case into the rows the rules read
(``pdwatch rules test``).
Imports every stage below it (sources, events, model, capacity, rules); never the views or Textual.
"""
