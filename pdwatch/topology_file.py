"""Read ``--topology-file`` (YAML) and ``--prefill/--decode`` globs into endpoint specs.

    endpoints:
      - name: prefill_w0
        role: prefill
        globs: ["logs/*_prefill_w0.out"]
        gpus: 2
"""

from __future__ import annotations

from pathlib import Path

import yaml

from pdwatch.deployment import ROLES, EndpointSpec
from pdwatch.errors import UsageError


def load_topology(path: str) -> list[EndpointSpec]:
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
    for i, entry in enumerate(data["endpoints"]):
        where = f"{path}: endpoints[{i}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: expected a mapping with name, role, globs")
        unknown = set(entry) - {"name", "role", "globs", "glob", "gpus"}
        if unknown:
            raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        name, role = entry.get("name"), entry.get("role")
        globs = entry.get("globs", entry.get("glob"))
        globs = [globs] if isinstance(globs, str) else globs
        if not isinstance(name, str) or not name:
            raise UsageError(f"{where}: 'name' must be a non-empty string")
        if role not in ROLES:
            raise UsageError(f"{where}: 'role' must be one of {', '.join(ROLES)}")
        if not isinstance(globs, list) or not globs or not all(isinstance(g, str) for g in globs):
            raise UsageError(f"{where}: 'globs' must be a list of file globs")
        gpus = entry.get("gpus")
        if gpus is not None and (not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1):
            raise UsageError(f"{where}: 'gpus' must be a positive integer")
        specs.append(EndpointSpec(name, role, tuple(globs), gpus))
    return specs


def role_globs(prefill: list[str] | None, decode: list[str] | None) -> list[EndpointSpec]:
    specs = []
    for role, globs in (("prefill", prefill), ("decode", decode)):
        if globs:
            specs.append(EndpointSpec("", role, tuple(globs)))
    return specs
