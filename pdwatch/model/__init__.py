"""Events -> what the deployment is and did: endpoints and roles (``deployment``, ``topology``,
``topology_file``), start-up facts (``facts``, ``log_facts``), the per-endpoint pandas
``store`` the rules read through ``rules.model``'s views, and the headline (``throughput``).

Imports ``parsers``, ``rules.model``, ``sources`` (notices, ssh and URL names) and ``errors``;
never the session, the views or Textual.
"""
