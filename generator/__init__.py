"""gpudash: GPU monitoring for Kubernetes as code.

The engine turns dashboard and alarm definitions plus the DCGM exporter's
counters CSV into Grafana dashboards, CloudWatch artifacts and the configs that
feed them.
"""

__version__ = "0.1.0"
