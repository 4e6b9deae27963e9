"""Widgets of the dashboard: header, endpoint panes, findings table, screens."""
