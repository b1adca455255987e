"""`gpudash preview`: the Grafana dashboards drawn as a static site from a real Prometheus.

A second consumer of the dashboard JSON: every panel's own `expr`, interpolated as Grafana
interpolates it, is sent to Prometheus; nothing here writes PromQL of its own.
"""
