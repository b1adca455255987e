"""promtool's verdict on a Prometheus configuration the build writes (the agent's prometheus.yaml)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest


def promtool_check_config(tmp_path: Path, prometheus_yaml: dict) -> tuple[int, str]:
    """promtool check config on the agent's prometheus.yaml, each job's Kubernetes discovery replaced by a static
    target (Debian's promtool has no Kubernetes discovery)."""
    import shutil
    import subprocess

    import yaml

    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed")
    config = copy.deepcopy(prometheus_yaml)
    for job in config["scrape_configs"]:
        job.pop("kubernetes_sd_configs", None)
        job["static_configs"] = [{"targets": ["127.0.0.1:9400"]}]
    path = tmp_path / "prometheus.yaml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run(["promtool", "check", "config", str(path)], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr
