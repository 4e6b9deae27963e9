"""Screens over the dashboard: finding detail, endpoint detail, seek input, help."""
