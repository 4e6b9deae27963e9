"""pdwatch's rules as a Prometheus rule file: recording rules for the stats fields, alerts for the findings.

``export(rules, options) -> Export``: the YAML text of one rule group (``pdwatch``), and the
rules left out with the reason. ``pdwatch rules export --format prometheus`` prints it.

**The stats lines.** Recording rules make pdwatch's per-stats-line fields from the series
pdwatch reads off a ``/metrics`` page (the names of ``pdwatch.parsers.exposition``, the one
table), one series per engine labelled ``job``, ``instance``, ``role``, ``engine``:
``pdwatch:running``, ``pdwatch:waiting``, ``pdwatch:kv_usage_pct`` (100 x the fraction),
``pdwatch:prompt_tps`` / ``pdwatch:gen_tps`` (``irate`` of the token counters: the rate
between the last two scrapes, as pdwatch computes it per scrape), ``pdwatch:preemptions``
(their increase), ``pdwatch:prefix_hit_pct`` and ``pdwatch:external_prefix_hit_pct`` (the cache's hits over
its queries in that interval), and a Dynamo frontend's fields per endpoint. The group is evaluated
every ``interval`` (``--interval``, which must be the scrape interval: "N samples" are N
scrapes), so each evaluation is one stats line.

**The rules.** Each built-in rule's ``expr``, ``when`` and ``value`` are translated node by
node; pdwatch's semantics map onto PromQL as follows.

- A window of ``N samples`` is ``N x interval`` back, left-open as pdwatch's: ``[W - 1ms]``
  (Prometheus 2.x range selectors include their start). A window function over a plain
  field is ``<fn>_over_time(pdwatch:field[W])``; over a per-line expression, a subquery at
  the interval (``(expr)[W:interval]``). At endpoint scope a window pools the lines of all
  engines: sums and counts are added over the engines (``avg``, ``fraction``, ``sum``,
  ``samples`` are exact), ``max``/``min`` taken over them; ``p50``/``quantile``, ``slope``,
  ``last``, ``stddev`` are the engines' values combined (exact for one engine).
- A per-line condition is 0/1 (``> bool``; ``and`` is a product, ``or`` a sum capped at 1,
  ``not`` 1 - x), so ``fraction`` is an average. An instance-level condition is a filter:
  ``and``/``or``/``unless`` on label sets; ``not`` is pushed into the comparisons (``not a < b``
  is ``a >= b``), which keeps pdwatch's rule that an unknown never fires.
- ``role() == "decode"`` selects by the ``role`` label (``unknown``: no label); a Dynamo
  frontend (its ``dynamo_frontend_`` series) is role ``frontend``. ``peer_max("decode", x)``
  is ``max`` of x over the endpoints with that label (over the whole server, or per
  ``--deployment-label``); ``engines()`` counts an endpoint's engines.
- Facts are not metrics: ``fact("max_num_seqs")`` reads the series
  ``pdwatch_fact{fact="max_num_seqs", job=..., instance=...}`` (``job``/``instance`` may be
  left out: a fact for a job, or for all). ``--fact NAME[{job="...",instance="..."}]=VALUE``
  writes those as recording rules; a user may also supply them. A rule that needs a fact
  fires only where it is given (pdwatch's "unknown"); ``coalesce`` gives the default.
  ``max_capture_size()`` is the fact, else vLLM's default ``min(2 x max_num_seqs, 512)``.
- Log events (``count_events``) are none in Prometheus: 0. A rule whose condition is then
  never true (it reads only log events or start-up facts the logs have) is left out, and
  said so; ``stats_missing`` is written by hand from ``up`` and absent series instead.
- ``keep_firing_for`` is left out (Prometheus 2.42, Debian's, has none; 2.47 added it).

**Annotations.** ``summary`` and ``description`` (the explanation, then "Fix:" and the
recommendation) are pdwatch's templates: ``{{ endpoint }}`` is ``$labels.instance``,
``{{ value }}`` ``$value`` (the alert's value is the rule's ``value``), and any other hole
is the same expression as an instant query for the alert's own labels (Prometheus's
``query`` template function), or ``unknown``.

**The modules.** ``fields`` (the options, the levels, the stats fields' recording rules),
``facts`` (the start-up facts: ``--fact``, the ``pdwatch_fact`` series), ``translate`` (a rule's
expressions as PromQL), ``annotations`` (its templates as annotations), ``rule_file`` (the
group as YAML, ``export``).
"""

from __future__ import annotations

from pdwatch.alerting.facts import NUMERIC_FACTS, parse_fact
from pdwatch.alerting.fields import ExportOptions, FactValue, field_rules
from pdwatch.alerting.rule_file import Export, export, translate_rule
from pdwatch.alerting.translate import Untranslatable

__all__ = ["NUMERIC_FACTS", "Export", "ExportOptions", "FactValue", "Untranslatable", "export", "field_rules",
           "parse_fact", "translate_rule"]
