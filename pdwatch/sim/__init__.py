"""A small, honest simulator of a prefill/decode-disaggregated vLLM deployment.

It steps a simulated clock over the flow client -> prefill -> KV transfer -> decode
(``model``), and writes the files a real deployment writes (``logwriter``: one log per
endpoint in the exact vLLM / Dynamo formats, optional recorded ``/metrics`` scrapes from
``metrics``). ``scenarios`` holds the labelled library that ``samples/`` is made from.
No Textual here: the simulator runs headless, in tests and behind ``pdwatch simulate``.
"""

from .logwriter import NOISE_LEVELS, STYLES, LogOptions
from .model import Crash, FlakyLink, RoleSettings, SimConfig, Simulation
from .runner import RunResult, run
from .topology import Topology, parse_topology

__all__ = [
    "NOISE_LEVELS",
    "STYLES",
    "Crash",
    "FlakyLink",
    "LogOptions",
    "RoleSettings",
    "RunResult",
    "SimConfig",
    "Simulation",
    "Topology",
    "parse_topology",
    "run",
]
