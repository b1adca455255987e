"""Clients of the remote systems gpudash talks to, together: CloudWatch (botocore), Grafana's HTTP API,
the Kubernetes API (the official client), Prometheus' HTTP API and the DCGM exporter's /metrics.

Each turns transport failures into RemoteError and answers that are not the API's into a clear
failure; the deadline, pacing and bounded HTTP reads they share live here too. What to do with an
answer (check it, plan a change) is the business of `checks` and `targets`.
"""

from .deferred import clients_packages

clients_packages()
