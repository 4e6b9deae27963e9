"""The diagnosis: the verdict, the findings grouped, the endpoints worst first (``diagnose``)."""

from .diagnosis import Diagnosis, diagnose, severity_order
from .figures import FiguresMemo

__all__ = ["Diagnosis", "FiguresMemo", "diagnose", "severity_order"]
