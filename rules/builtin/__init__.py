"""Built-in rules (YAML, the same grammar as user rules): see README.md here."""
