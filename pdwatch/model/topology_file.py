"""Read ``--topology-file`` (YAML) and ``--prefill/--decode`` globs into endpoint specs.

    endpoints:
      - name: prefill_w0
        role: prefill
        globs: ["logs/*_prefill_w0.out"]
        gpus: 2
      - name: decode_w0                      # its log and its live /metrics: one endpoint
        role: decode
        globs: ["logs/*_decode_w0.out", "ssh://node7/logs/*_decode_w0.out"]
        urls: ["http://node7:8000/metrics"]
        prom: '{job="vllm-decode", instance="node7:8000"}'   # its series in a Prometheus server

``urls`` (or ``url``) name ``/metrics`` endpoints exactly (normalised: ``http://h:p`` gets
``/metrics``); a URL or ``ssh://host/path`` written among the globs is understood too.
``prom`` (a selector, or a list of them) picks the targets of a ``prom+http://`` source that
are this endpoint, by the labels their series share (``job``, ``instance``, any target label).
"""

from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Iterable, Mapping

import yaml

from pdwatch.model.deployment import ROLES, EndpointSpec
from pdwatch.errors import UsageError
from pdwatch.sources.promql import SelectorError, parse_selector
from pdwatch.sources.urls import normalize_url
from pdwatch.sources.records import SourceNotice
from pdwatch.sources.ssh_spec import is_ssh, parse_ssh


def load_topology(path: str) -> list[EndpointSpec]:
    folder = os.path.dirname(os.path.realpath(path))
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the topology file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: the topology file is not UTF-8 text") from None
    try:
        data = yaml.safe_load(text)  # safe: plain data only, no object construction
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise UsageError(f"{path}{where}: {problem}") from None
    if not isinstance(data, dict) or not isinstance(data.get("endpoints"), list):
        raise UsageError(f"{path}: expected a mapping with an 'endpoints' list")
    specs: list[EndpointSpec] = []
    lines = _entry_lines(text)
    for i, entry in enumerate(data["endpoints"]):
        where = f"{path}:{lines[i]}: endpoints[{i}]" if i < len(lines) else f"{path}: endpoints[{i}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: expected a mapping with name, role, globs")
        unknown = set(entry) - {"name", "role", "globs", "glob", "urls", "url", "gpus", "prom"}
        if unknown:
            raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        name, role = entry.get("name"), entry.get("role")
        globs = entry.get("globs", entry.get("glob", []))
        globs = [globs] if isinstance(globs, str) else globs
        urls = entry.get("urls", entry.get("url", []))
        urls = [urls] if isinstance(urls, str) else urls
        prom = entry.get("prom", [])
        prom = [prom] if isinstance(prom, str) else prom
        if not isinstance(name, str) or not name:
            raise UsageError(f"{where}: 'name' must be a non-empty string")
        if role not in ROLES:
            raise UsageError(f"{where}: 'role' must be one of {', '.join(ROLES)}")
        if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
            raise UsageError(f"{where}: 'globs' must be a list of file globs")
        if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
            raise UsageError(f"{where}: 'urls' must be a list of http://HOST:PORT/metrics URLs")
        if not isinstance(prom, list) or not all(isinstance(p, str) for p in prom):
            raise UsageError(f"{where}: 'prom' must be a series selector such as '{{job=\"vllm\"}}', or a list")
        for selector in prom:
            try:
                parse_selector(selector)
            except SelectorError as exc:
                raise UsageError(f"{where}: prom: {exc}") from None
        if not globs and not urls and not prom:
            raise UsageError(f"{where}: give 'globs' (log files), 'urls' (/metrics) or 'prom' (a Prometheus "
                             f"selector), or several")
        written = tuple(globs) + tuple(urls) + tuple(f"prom:{p}" for p in prom)
        globs = [_local(_source_pattern(g, where), folder) for g in globs] + [_url(u, where) for u in urls]
        gpus = entry.get("gpus")
        if gpus is not None and (not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1):
            raise UsageError(f"{where}: 'gpus' must be a positive integer")
        specs.append(EndpointSpec(name, role, tuple(globs), gpus, written, tuple(prom)))
    return specs


def _local(pattern: str, folder: str) -> str:
    """A local glob with a folder in it, absolute and resolved: relative ones from the topology
    file's folder (not the current one), the folder part through its symlinks."""
    if pattern.startswith(("http://", "https://")) or "/" not in pattern or _is_ssh_name(pattern):
        return pattern
    absolute = pattern if os.path.isabs(pattern) else os.path.join(folder, pattern)
    head, tail = absolute, ""
    while any(c in head for c in "*?["):  # resolve the part before the first wildcard
        head, part = os.path.split(head)
        tail = os.path.join(part, tail) if tail else part
    return os.path.join(os.path.realpath(head), tail) if tail else os.path.realpath(head)


def _is_ssh_name(pattern: str) -> bool:
    """``host:/path``, as an ssh source is named."""
    host, sep, rest = pattern.partition(":")
    return bool(sep) and "/" not in host and rest.startswith("/")


def spec_urls(specs: list[EndpointSpec]) -> list[str]:
    """The /metrics URLs the endpoints declare: sources of those endpoints."""
    return [g for spec in specs for g in spec.globs if g.startswith(("http://", "https://"))]


def _entry_lines(text: str) -> list[int]:
    """The 1-based line of each item of ``endpoints``, for errors that point at it."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if getattr(key, "value", None) == "endpoints" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def _url(text: str, where: str) -> str:
    try:
        return normalize_url(text)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None


def _source_pattern(text: str, where: str) -> str:
    """A glob as the sources name what it matches: URLs normalised, ssh://host/p as host:/p."""
    if text.lower().startswith(("http://", "https://")):
        return _url(text, where)
    if is_ssh(text):
        try:
            return parse_ssh(text).name
        except ValueError as exc:
            raise UsageError(f"{where}: {exc}") from None
    return text


def role_globs(prefill: list[str] | None, decode: list[str] | None) -> list[EndpointSpec]:
    specs = []
    for role, globs in (("prefill", prefill), ("decode", decode)):
        if globs:
            specs.append(EndpointSpec("", role, tuple(_source_pattern(g, f"--{role}") for g in globs)))
    return specs


def unmatched_notices(specs: Iterable[EndpointSpec], sources: list[str],
                      labels: Mapping[str, Mapping[str, str]] | None = None) -> list[SourceNotice]:
    """One notice per topology endpoint that none of the sources matches (it is left out of the
    deployment, not reported as an endpoint that prints nothing). ``labels``: the Prometheus
    targets' labels by source, which the endpoints' ``prom:`` selectors match."""
    labels = labels or {}
    return [SourceNotice(spec.name, "info", f"topology endpoint {spec.name} matches none of the sources "
                                            f"(globs: {', '.join(spec.written or spec.globs)}); left out")
            for spec in specs if spec.name and not any(spec.matches(src, labels.get(src)) for src in sources)]
