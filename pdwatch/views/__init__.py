"""What people read: ``tui`` (the Textual dashboard, the only package importing Textual),
``report`` (JSON, Markdown and HTML writers), ``exporter`` (pdwatch's view as Prometheus
metrics) and ``prometheus_rules`` (the rules as a Prometheus rule file: PromQL). Views read sessions, analyses and stores; they never parse text.
"""
