"""The start-up facts a rule reads: they are no metrics.

Which facts are numbers (``NUMERIC_FACTS``: the ones PromQL can read) and which are the
deployment's (``DEPLOYMENT_FACTS``: given without labels); ``parse_fact``: a ``--fact``
value; ``fact_join``: the recording rule that gives each engine its fact from the
``pdwatch_fact`` series (its instance's, else its job's, else everyone's); ``facts_note``: the
annotation that says where a rule's facts come from.
"""

from __future__ import annotations

from pdwatch.alerting.fields import ENGINES, ExportOptions, FactValue, number

FACT_SERIES = "pdwatch_fact"
NUMERIC_FACTS = frozenset({
    "max_num_seqs", "max_num_batched_tokens", "max_capture_size", "num_speculative_tokens", "kv_capacity_tokens",
    "max_concurrency", "max_concurrency_tokens", "planned_concurrency", "api_server_count", "block_size",
    "tensor_parallel_size", "data_parallel_size", "concurrency", "isl", "osl"})
DEPLOYMENT_FACTS = frozenset({"concurrency", "isl", "osl"})


def facts_note(names: list[str], o: ExportOptions) -> str:
    """Where the facts a rule reads come from: they are no metrics."""
    given = {}
    for f in o.facts:
        where = ",".join(f'{k}="{v}"' for k, v in (("job", f.job), ("instance", f.instance)) if v is not None)
        given.setdefault(f.name, []).append(f"{number(f.value)}" + (f" for {{{where}}}" if where else ""))
    parts = []
    for name in names:
        source = f"given at export: {', '.join(given[name])}" if name in given else "not given at export"
        parts.append(f"{name} ({source})")
    capture = " max_capture_size falls back to vLLM's default min(2 x max_num_seqs, 512)." \
        if "max_capture_size" in names else ""
    return (f"Start-up facts, not metrics: {'; '.join(parts)}. They are read from {FACT_SERIES}{{fact=\"NAME\"}} "
            f"series (per job or instance, or for all targets): pdwatch rules export --fact "
            f"'NAME{{job=\"...\"}}=VALUE' writes them; vLLM logs them at start-up (pdwatch report shows them). "
            f"Where a fact is missing the rule does not fire, as pdwatch does with an unknown fact.{capture}")


def fact_join(fact: str, o: ExportOptions) -> str:
    """``pdwatch_fact`` for each engine: its own instance's, else its job's, else everyone's."""
    e0 = f"0 * {ENGINES}"
    sel = f'{FACT_SERIES}{{fact="{fact}"'
    return (f'({e0} + on(job, instance) group_left {sel},instance!=""}})\n'
            f'or ({e0} + on(job) group_left {sel},instance="",job!=""}})\n'
            f'or ({e0} + on() group_left {sel},instance="",job=""}})')


def parse_fact(text: str) -> FactValue:
    """``--fact NAME=VALUE`` or ``--fact 'NAME{job="decode",instance="node7:8000"}=VALUE'``."""
    from pdwatch.sources.promql import SelectorError, parse_selector

    head, sep, value = text.rpartition("=")
    if not sep or not head:
        raise ValueError(f"--fact {text!r}: expected NAME=VALUE, e.g. max_capture_size=512")
    name, brace, rest = head.partition("{")
    name = name.strip()
    if name not in NUMERIC_FACTS:
        raise ValueError(f"--fact {text!r}: {name!r} is not a numeric fact a rule reads "
                         f"({', '.join(sorted(NUMERIC_FACTS))})")
    try:
        number_value = float(value)
    except ValueError:
        raise ValueError(f"--fact {text!r}: {value!r} is not a number") from None
    job = instance = None
    if brace:
        try:
            matchers = parse_selector("{" + rest)
        except SelectorError as exc:
            raise ValueError(f"--fact {text!r}: {exc}") from None
        for m in matchers:
            if m.op != "=" or m.name not in ("job", "instance"):
                raise ValueError(f"--fact {text!r}: only job=\"...\" and instance=\"...\" may be given")
        job = next((m.value for m in matchers if m.name == "job"), None)
        instance = next((m.value for m in matchers if m.name == "instance"), None)
        if instance is not None and job is None:
            raise ValueError(f"--fact {text!r}: an instance needs its job too")
    if name in DEPLOYMENT_FACTS and (job or instance):
        raise ValueError(f"--fact {text!r}: {name} is a deployment fact: give it without labels")
    return FactValue(name, number_value, job, instance)
