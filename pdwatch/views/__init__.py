"""What people read: ``tui`` (the Textual dashboard, the only package importing Textual),
``report`` (JSON, Markdown and HTML writers) and ``exporter`` (pdwatch's view as Prometheus
metrics). Views render sessions, analyses and their diagnosis; they never parse text, and never
sort, group or rank findings of their own.
"""
