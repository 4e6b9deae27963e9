"""Which endpoint each source belongs to, its role, engines and GPUs.

Evidence, strongest first: an explicit topology (``--topology-file`` or
``--prefill/--decode`` globs), then what the log itself prints: a Dynamo frontend's HTTP
service (role ``frontend``), what a ``dynamo.vllm`` worker registers (``prefill``; the
OpenAI endpoints with a KV connector: ``decode``, without one: ``aggregated``), vLLM's
``kv_role`` (kv_producer/kv_consumer; ``kv_both`` says nothing about the role). Only when the
log says nothing does the file name decide: the srt-slurm name (``{node}_{role}_w{i}.out``;
one endpoint may span the files of several nodes), then a file name containing the word
``prefill`` or ``decode`` (a job named ``disagg_prefill_kill`` names every one of its files).
A ``/metrics`` URL is the endpoint ``host:port`` unless a topology entry lists it; a target
read from a Prometheus server is the endpoint its ``instance`` label names (a topology's
``prom:`` selector matches its labels; a ``role`` label, Dynamo's ``worker_type`` or
``dynamo_component`` give its role): the labels its events carry (``Event.labels``), given
to ``endpoint_of`` with the source, never read back out of the source's name; an ssh source
``host:/path/file.log`` is named from its file name, like a local file.
GPUs = DP x TP x PP where the log says so; otherwise a guess, flagged as such.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Iterable
from urllib.parse import urlsplit

import regex

from pdwatch.parsers import Event
from pdwatch.sources.prometheus import target_name, target_port
from pdwatch.sources.promql import Matcher, SelectorError, matches_all, parse_selector

ROLES = ("prefill", "decode", "aggregated", "frontend", "unknown")
# Kinds only a Dynamo frontend's log gives: its HTTP responses, the backends it lost, its discovery.
FRONTEND_KINDS = frozenset({"frontend_response", "backend_error", "worker_set"})
PARALLEL_KEYS = ("data_parallel_size", "tensor_parallel_size", "pipeline_parallel_size")

_SRT_SLURM = regex.compile(
    r"^(?P<node>.+?)_(?P<role>prefill|decode|agg|frontend)_(?:w)?(?P<index>\d+)(?:\.metrics)?\.(?:out|err|log|txt)$")
# ``logs/raw_prometheus.jsonl#decode_w0``: the source of a record of srt-slurm's scrape file
_RAW_PROMETHEUS = regex.compile(
    r"^raw_prometheus[^#/]*\.jsonl(?:\.gz)?#(?P<name>(?P<role>prefill|decode|agg|frontend)"
    r"(?:_(?:w)?(?P<index>\d+)|@(?P<node>[^:#]+?)(?::(?P<port>\d+))?))$", regex.I)
_ROLE_WORD = regex.compile(r"(?<![a-z])(prefill|decode)(?![a-z])", regex.I)
_LOG_SUFFIX = regex.compile(r"(?:\.metrics)?\.(?:out|log|err|txt)$")  # x.log and x.metrics.txt: one endpoint
_KV_ROLE = {"kv_producer": "prefill", "kv_consumer": "decode"}


@dataclass(frozen=True)
class EndpointSpec:
    """One endpoint declared by the user (topology file), or with an empty name a role for
    every matching file (``--prefill GLOB``), each file keeping the endpoint its name gives.

    A local glob with a folder in it is matched against the source's resolved absolute path
    (a topology file's relative globs are made absolute from the file's own folder when it
    is read, as docker-compose and Prometheus file_sd do); a bare file-name glob
    (``*_decode_w0.out``) against the source's file name. URLs and ``host:/path`` ssh
    sources are compared as written."""

    name: str
    role: str
    globs: tuple[str, ...]
    gpus: int | None = None
    written: tuple[str, ...] = ()  # the globs as the user wrote them, for notices
    prom: tuple[str, ...] = ()  # series selectors ({job="vllm",instance="node7:8000"}) of its Prometheus targets

    def matches(self, source: str, labels: Mapping[str, str] | None = None) -> bool:
        """``labels``: a Prometheus target's (its ``prom:`` selectors match them); None for the rest."""
        if self.prom and labels is not None and any(matches_all(_selector(p), labels) for p in self.prom):
            return True
        base = os.path.basename(source)
        resolved = _resolved(source) or _remote_path(source)
        for g in self.globs:
            # equality first: a URL such as http://[::1]:8000/metrics is not a valid glob of itself
            if source == g or fnmatch.fnmatch(source, g):
                return True
            if "/" not in g and fnmatch.fnmatch(base, g):
                return True
            if resolved is not None and os.path.isabs(g) and fnmatch.fnmatch(resolved, g):
                return True
        return False


_SELECTORS: dict[str, tuple[Matcher, ...]] = {}


def _selector(text: str) -> tuple[Matcher, ...]:
    """A topology's ``prom:`` selector, parsed once (checked when the topology file is read)."""
    got = _SELECTORS.get(text)
    if got is None:
        try:
            got = parse_selector(text)
        except SelectorError:
            got = (Matcher("__never__", "=", "\x00never"),)  # matches no target
        _SELECTORS[text] = got
    return got


def _remote_path(source: str) -> str | None:
    """The remote path of an ssh source named ``host:/path`` (a topology's absolute globs match it)."""
    host, sep, path = source.partition(":")
    return path if sep and host and "/" not in host and path.startswith("/") else None


def _resolved(source: str) -> str | None:
    """A local source's resolved absolute path (None for URLs, ssh sources and stdin)."""
    if source == "-" or "://" in source or (":" in source.split("/", 1)[0] and not os.path.exists(source)):
        return None
    return os.path.realpath(source)


@dataclass
class Endpoint:
    name: str
    role: str = "unknown"
    role_from: str = "unknown"  # topology | flag | dynamo | kv_role | prometheus label | file name | unknown
    sources: list[str] = field(default_factory=list)
    engines: set[int] = field(default_factory=set)
    facts: dict[str, Any] = field(default_factory=dict)
    declared_gpus: int | None = None

    # Parallel sizes as read: key -> (size, where it was read). An explicit value (the args,
    # a Namespace, the engine config line) beats one implied by the non-default args dict
    # leaving the key out (vLLM lists only what differs from the default, 1).
    parallel: dict[str, tuple[int, str]] = field(default_factory=dict)

    def read_parallel(self, key: str, size: int, origin: str, implied: bool = False) -> None:
        held = self.parallel.get(key)
        if held is None or (held[1].startswith("default") and not implied):
            self.parallel[key] = (size, origin)
            self.facts[key] = size

    @property
    def gpus(self) -> int | None:
        if self.declared_gpus is not None:
            return self.declared_gpus
        if self.role == "frontend":
            return 0  # an HTTP server, router and tokenizer: it holds no GPU
        dp = self.parallel.get("data_parallel_size", (len(self.engines) or None, ""))[0]
        tp = self.parallel.get("tensor_parallel_size", (1, ""))[0]
        pp = self.parallel.get("pipeline_parallel_size", (1, ""))[0]
        return dp * tp * pp if dp else None

    @property
    def gpus_from(self) -> str:
        """Where DP x TP x PP came from, for the reader: each factor and its line, or the guess."""
        if self.declared_gpus is not None:
            return "declared in the topology file"
        if self.role == "frontend":
            return "a frontend holds no GPU"
        parts = []
        for key, label in zip(PARALLEL_KEYS, ("DP", "TP", "PP")):
            if key in self.parallel:
                size, origin = self.parallel[key]
                parts.append(f"{label} {size} ({origin})")
            elif key == "data_parallel_size":
                parts.append(f"DP {len(self.engines) or '?'} (guessed from the engines seen)")
            else:
                parts.append(f"{label} 1 (guessed: not printed)")
        return ", ".join(parts)

    @property
    def stats_silence(self) -> str | None:
        """Why this endpoint prints no stats lines, when its own start-up lines say so."""
        if self.facts.get("disable_log_stats"):
            return "started with --disable-log-stats: vLLM prints no stats lines"
        if self.facts.get("stats_disabled"):
            count = self.facts.get("api_server_count")
            servers = f"api_server_count {count}" if count else "more than one API server"
            return f"vLLM disabled its stats logging ({servers})"
        return None

    @property
    def gpus_inferred(self) -> bool:
        """True when the GPU count is a guess: a parallel size no start-up line gave."""
        if self.declared_gpus is not None or self.role == "frontend":
            return False
        return any(key not in self.parallel for key in PARALLEL_KEYS)


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def _scrape_port(source: str, labels: Mapping[str, str] | None = None) -> int | None:
    """The server port a scrape source names: a /metrics URL's, or a Prometheus target's instance."""
    if labels is not None:
        return target_port(labels)
    if _is_url(source):
        return urlsplit(source).port
    return None


def name_from_file(source: str, labels: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """Endpoint name and role a file name gives (role None when it says nothing); a URL is ``host:port``,
    a Prometheus target (``labels``: its labels) its ``instance``."""
    if labels is not None:
        return target_name(labels), None
    if source.startswith(("http://", "https://")):
        parts = urlsplit(source)
        return f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}", None
    base = os.path.basename(source)
    raw = _RAW_PROMETHEUS.match(base)  # srt-slurm's raw_prometheus.jsonl: a record names its endpoint
    if raw:
        role = {"agg": "aggregated"}.get(raw["role"].lower(), raw["role"].lower())
        return raw["name"], role
    m = _SRT_SLURM.match(base)
    if m:
        role = {"agg": "aggregated"}.get(m["role"], m["role"])
        return (f"{m['role']}_w{m['index']}" if role != "frontend" else f"frontend_{m['index']}"), role
    stem = _LOG_SUFFIX.sub("", base) if base != "-" else "stdin"
    word = _ROLE_WORD.search(base)
    return stem, (word[1].lower() if word else None)


class DeploymentModel:
    """Grows as events arrive; ``endpoints`` is always the current best view."""

    def __init__(self, specs: Iterable[EndpointSpec] = ()) -> None:
        self._specs = list(specs)
        self.specs = tuple(self._specs)
        self.absorbed: list[tuple[str, str]] = []  # (endpoint, into): URL endpoints claimed by a log
        self.endpoints: dict[str, Endpoint] = {}
        self._by_source: dict[str, Endpoint] = {}
        self._labels: dict[str, Mapping[str, str]] = {}  # a Prometheus target's labels, by its source
        for spec in self._specs:
            if spec.name:
                self.endpoints[spec.name] = Endpoint(spec.name, spec.role, "topology", declared_gpus=spec.gpus)

    def endpoint_of(self, source: str, labels: Mapping[str, str] | None = None) -> Endpoint:
        """The endpoint of ``source``, placed on its first sight. ``labels``: a Prometheus target's
        (its events' ``labels``), which name and match it; None for logs and /metrics URLs."""
        endpoint = self._by_source.get(source)
        if endpoint is not None:
            return endpoint
        if labels is not None:
            self._labels[source] = labels  # its port, should a log claim it later (_claim_urls)
        spec = next((s for s in self._specs if s.matches(source, labels)), None)
        served = self.serving_port(_scrape_port(source, labels)) if spec is None else None
        if spec is None and served is None:
            served = self.raw_record_home(source)  # a raw_prometheus.jsonl record: the log it names
        if spec is not None and spec.name:
            endpoint = self.endpoints[spec.name]
        elif served is not None:  # the /metrics of a server whose log we read: the same endpoint
            endpoint = served
        elif spec is not None:
            name, _ = name_from_file(source, labels)
            endpoint = self.endpoints.setdefault(name, Endpoint(name))
            endpoint.role, endpoint.role_from = spec.role, "flag"
        else:
            name, role = name_from_file(source, labels)
            endpoint = self.endpoints.setdefault(name, Endpoint(name))
            if role is not None and endpoint.role_from == "unknown":  # a hint: what the log prints wins
                endpoint.role, endpoint.role_from = role, "file name"
        endpoint.sources.append(source)
        self._by_source[source] = endpoint
        return endpoint

    def raw_record_home(self, source: str) -> Endpoint | None:
        """The endpoint of the log a raw_prometheus.jsonl record's source names, when one log does:
        ``FILE#decode_w0`` the endpoint ``decode_w0`` (``<node>_decode_w0.out``); ``FILE#decode@node1:8081``
        (srt-slurm's: the worker's node) the one endpoint with a log ``node1_decode_w<i>.out``, or
        ``node1_agg_w<i>.out`` (srt-slurm scrapes an aggregated worker as ``decode``). None when no log
        or several do (two workers of a role on one node: ``raw_record_candidates`` lists them)."""
        found = self.raw_record_candidates(source)
        return found[0] if len(found) == 1 else None

    def raw_record_candidates(self, source: str) -> list[Endpoint]:
        m = _RAW_PROMETHEUS.match(os.path.basename(source))
        if m is None:
            return []
        role = m["role"].lower()
        roles = {role, "agg"} if role == "decode" else {role}
        if m["index"] is not None:
            names = [f"frontend_{m['index']}"] if role == "frontend" else \
                [f"{r}_w{m['index']}" for r in [role, *sorted(roles - {role})]]
            return [self.endpoints[n] for n in names if n in self.endpoints and self.endpoints[n].sources][:1]
        found: list[Endpoint] = []
        for endpoint in self.endpoints.values():
            for src in endpoint.sources:
                log = _SRT_SLURM.match(os.path.basename(src))
                if log is not None and log["node"] == m["node"] and log["role"] in roles:
                    found.append(endpoint)
                    break
        return found

    def known(self, source: str) -> Endpoint | None:
        """The endpoint of a source already seen (None: ``endpoint_of`` would place a new one)."""
        return self._by_source.get(source)

    def placed_sources(self) -> set[str]:
        """Every source some endpoint (or non-server) holds: those whose lines were recognised."""
        return set(self._by_source)

    def attach(self, source: str, endpoint: Endpoint) -> None:
        """``source`` is another source of ``endpoint`` (a recorded scrape of its server)."""
        if self._by_source.get(source) is endpoint:
            return
        self._by_source[source] = endpoint
        endpoint.sources.append(source)

    def _claim_urls(self, endpoint: Endpoint, port: int) -> None:
        """A URL on ``port`` scraped before this log said its port made an endpoint of its own
        (``host:port``): it is this endpoint's /metrics. Its sources move here; the store moves
        its rows (``absorbed``)."""
        if self.serving_port(port) is not endpoint:
            return
        for other in list(self.endpoints.values()):
            if other is endpoint or other.role_from == "topology" or not other.sources:
                continue
            if all(_scrape_port(src, self._labels.get(src)) == port for src in other.sources):
                for src in other.sources:
                    self._by_source[src] = endpoint
                    endpoint.sources.append(src)
                del self.endpoints[other.name]
                self.absorbed.append((other.name, endpoint.name))

    def serving_port(self, port: int | None) -> Endpoint | None:
        """The one endpoint whose log says its server listens on ``port`` (None if none or several:
        every node of a multi-node job may use the same port, and then only a topology can tell)."""
        if port is None:
            return None
        found = [e for e in self.endpoints.values() if e.facts.get("port") == port]
        return found[0] if len(found) == 1 else None

    def observe(self, event: Event) -> Endpoint:
        endpoint = self.endpoint_of(event.source, event.labels)
        if event.engine is not None and event.kind not in ("spec_decode", "kv_transfer"):
            endpoint.engines.add(event.engine)
        elif event.kind == "args":
            self._learn_args(endpoint, event)
        elif event.kind == "engine_config":
            for key in PARALLEL_KEYS:
                if isinstance(event.values.get(key), int):
                    endpoint.read_parallel(key, event.values[key], f"engine config, line {event.line_no}")
        elif event.kind == "role_hint":
            role, origin = event.values["role"], event.values.get("origin", "dynamo")
            if role == "decode" and origin == "dynamo":
                # Dynamo 1.x says "decode worker" of every worker serving the OpenAI endpoints,
                # aggregated ones too: only what the worker registers (below) tells them apart.
                endpoint.facts.setdefault("dynamo_says_decode", True)
            else:
                self._infer_role(endpoint, role, origin)
        elif event.kind == "dynamo_process":
            self._learn_dynamo(endpoint, event.values)
        elif event.kind == "kv_connector":
            endpoint.facts["kv_connector"] = event.values.get("name") or endpoint.facts.get("kv_connector")
            endpoint.facts["nixl"] = "Nixl" in str(endpoint.facts["kv_connector"])
            if endpoint.role_from == "dynamo" and endpoint.role == "aggregated":
                self._infer_role(endpoint, "decode", "dynamo", override=True)
        return endpoint

    def learned_from_lines(self, endpoint: Endpoint, kinds: Any, has_stats: bool) -> None:
        """What a log's other lines say of its role when no line named it (``DYN_LOG=warn``
        leaves out the lines that do): only a Dynamo frontend answers HTTP requests and loses
        backends; a dynamo.vllm worker with stats lines and no KV connector is aggregated (a
        connector is created before the engine serves, so it would have been seen)."""
        if endpoint.role_from not in ("unknown", "file name"):
            return
        if kinds & FRONTEND_KINDS:
            self._infer_role(endpoint, "frontend", "dynamo")
        elif has_stats and endpoint.facts.get("dynamo_process") == "worker" and not endpoint.facts.get("kv_connector"):
            self._infer_role(endpoint, "aggregated", "dynamo")

    def _learn_dynamo(self, endpoint: Endpoint, values: dict[str, Any]) -> None:
        """A Dynamo process naming itself: a frontend (its HTTP port is where its /metrics are),
        or a dynamo.vllm worker registering what it serves."""
        process = values.get("process")
        endpoint.facts["dynamo_process"] = process
        if process == "frontend":
            if isinstance(values.get("port"), int):
                endpoint.facts["port"] = values["port"]
                self._claim_urls(endpoint, values["port"])
            self._infer_role(endpoint, "frontend", "dynamo", override=True)
            return
        serves = values.get("serves")
        if serves is None:
            return
        if serves == "prefill":
            role = "prefill"
        else:  # the OpenAI endpoints: decode when a KV connector brings it prompts, else aggregated
            role = "decode" if endpoint.facts.get("kv_connector") else "aggregated"
        self._infer_role(endpoint, role, "dynamo", override=True)

    def _learn_args(self, endpoint: Endpoint, event: Event) -> None:
        args = event.values["args"]
        if isinstance(args.get("port"), int) and not isinstance(args["port"], bool):
            endpoint.facts["port"] = args["port"]  # where its /metrics are: a scrape of that port is this endpoint
            self._claim_urls(endpoint, args["port"])
        namespace = event.values.get("form") == "namespace"
        where = f"{'Namespace args' if namespace else 'non-default args'}, line {event.line_no}"
        for key in PARALLEL_KEYS:
            if isinstance(args.get(key), int) and not isinstance(args[key], bool):
                endpoint.read_parallel(key, args[key], where)
            elif not namespace and key not in args:  # the non-default args leave out what is at its default, 1
                endpoint.read_parallel(key, 1, f"default: not in the non-default args, line {event.line_no}",
                                       implied=True)
        kv = args.get("kv_transfer_config")
        if isinstance(kv, dict) and kv.get("kv_role") in _KV_ROLE:
            self._infer_role(endpoint, _KV_ROLE[kv["kv_role"]], "kv_role")

    @staticmethod
    def _infer_role(endpoint: Endpoint, role: str, origin: str, override: bool = False) -> None:
        """What a log says of its role: beats a file name's hint; ``override``: what a Dynamo
        process says of itself also beats what an earlier line implied (a connector seen after
        the worker registered)."""
        if endpoint.role_from in ("unknown", "file name") or (override and endpoint.role_from in
                                                                 ("dynamo", "kv_role")):
            if endpoint.role_from == "file name" and endpoint.role != role:
                endpoint.facts["role_conflict"] = (f"the log says {role} ({origin}); the file name said "
                                                   f"{endpoint.role}")
            endpoint.role, endpoint.role_from = role, origin
            if role == "frontend":
                endpoint.engines.clear()  # its scrape rows, read before its log said what it is
        elif endpoint.role != role:
            endpoint.facts["role_conflict"] = f"{origin} says {role}, {endpoint.role_from} says {endpoint.role}"
