"""The article's topology names (``4xDEP2-1xDEP8``): the project's one parser, ``pdwatch.model.topology``."""

from pdwatch.model.topology import Group as Tier, Topology, parse_topology

__all__ = ["Tier", "Topology", "parse_topology"]
