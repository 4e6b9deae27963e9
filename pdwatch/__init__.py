"""pdwatch: bottleneck analyzer for prefill/decode-disaggregated vLLM deployments.

Data flows one way, and each part imports only from the parts listed above it
(``tests/cli/test_layers.py`` holds the code to this with import-linter, and finds no cycle):

- ``errors``    one-line usage errors; imports nothing of pdwatch
- ``units``     durations read and written, numbers, sizes and times formatted: one home; standard library only
- ``parsers``   text -> typed events: vLLM/Dynamo log lines and /metrics pages (the repository's ``parsers/``)
- ``rules``     the rule engine: views of the store -> findings, and what a verdict is made of, with each
                built-in rule's verdict wording beside it (the repository's ``rules/``)
- ``sources``   paths, globs, stdin, ``ssh://``, /metrics URLs, Prometheus servers (``prom+http://``) -> blocks
                of lines, scrapes and notices
- ``events``    sources -> parsers: the event stream, big files on every core, recorded scrapes
- ``model``     events -> the deployment (endpoints, roles, GPUs), start-up facts, the pandas store, the headline
- ``sweep``     srt-slurm benchmark jobs -> sweep points: result files read in bounded memory, each run's
                time window, the Pareto axes named, the points the result file alone shows invalid
- ``capacity``  KV arithmetic from a model's config.json, and each endpoint's capacity
- ``diagnosis`` findings + the store -> one diagnosis: the verdict, the findings grouped, the endpoints worst first
- ``session``   the pipeline driven: the post-mortem analysis and the live watch/replay session
- ``views``     what people read: the Textual dashboard, the report writers, the Prometheus exporter; they
                render a diagnosis, never make one
- ``alerting``  the rules compiled to a Prometheus rule file (recording rules and alerts in PromQL)
- ``sim``       the simulator behind ``demo``, ``simulate`` and ``samples/``
- ``commands``  one module per sub-command; ``cli`` picks one
"""

__version__ = "0.1.0"
