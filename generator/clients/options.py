"""The options every client reads during a run: where to connect, and the run's deadline."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Options:
    """Where the remote systems are and by when every answer must be in (verify's options; preview uses
    the timeout alone)."""

    context: str | None = None  # kubeconfig context
    exporter_url: str | None = None
    prometheus_url: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None
    endpoint_name: str = "AWS_ENDPOINT_URL"  # how the endpoint was given, for the fixes: --endpoint-url or the variable
    timeout: float = 10.0  # seconds for the whole run, every group included
    prometheus_in_use: bool = True  # the kube group then looks for the scrape config as well
    cluster: str | None = None  # the entry of clusters the kube context is (verify --cluster); None: the agent's
    deadline: float = field(default=0.0, repr=False)  # time.monotonic() by which every answer is in
    # clients made during the run, shared by its groups (clients.kube.for_run: one kubeconfig load per run)
    clients: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def start(self) -> None:
        self.deadline = time.monotonic() + self.timeout

    def remaining(self) -> float:
        return (self.deadline or time.monotonic() + self.timeout) - time.monotonic()

    def socket_timeout(self, cap: float = 5.0) -> float:
        """How long one connect or read may wait: never past the deadline."""
        return max(0.05, min(cap, self.remaining()))
