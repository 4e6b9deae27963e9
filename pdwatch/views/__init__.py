"""What people read: ``tui`` (the Textual dashboard, the only package importing Textual),
``report`` (JSON, Markdown and HTML writers) and ``exporter`` (pdwatch's view as Prometheus
metrics). Views read sessions, analyses and stores; they never parse text.
"""
