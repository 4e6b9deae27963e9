"""The diagnosis: the verdict, the findings grouped, the endpoints worst first (``diagnose``)."""

from .diagnosis import Diagnosis, diagnose, severity_order

__all__ = ["Diagnosis", "diagnose", "severity_order"]
