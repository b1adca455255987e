"""A kubeconfig exec plugin that hangs (an SSO login waiting for a browser): verify's deadline stops it, the kube
check says the plugin hung and names its command, never its arguments, and no plugin process outlives verify."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
SECRET = "arg-secret-4f7a"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return status != "Z"  # a zombie is dead, only not collected by its (gone) parent yet


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# A wrapper that execs its command, and one that does not (gke-gcloud-auth-plugin running gcloud, kubelogin): the
# child it starts is stopped with it.
PLUGINS = {"exec": "echo $$ >> {pids}\nexec sleep 300\n",
           "child": "echo $$ >> {pids}\nsleep 300 &\necho $! >> {pids}\nwait\n"}


@pytest.mark.parametrize("plugin_kind", PLUGINS)
@pytest.mark.parametrize("groups", [("--skip", "cloudwatch"), ()], ids=["threads", "child process"])
def test_a_hung_exec_plugin_is_stopped_at_the_deadline_and_named(tmp_path, groups, plugin_kind):
    pids = tmp_path / "pids"
    plugin = tmp_path / "get-token"
    plugin.write_text("#!/bin/sh\n" + PLUGINS[plugin_kind].format(pids=pids))
    plugin.chmod(0o755)
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
                  "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{_closed_port()}"}}],
                  "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                  "users": [{"name": "u", "user": {"exec": {
                      "apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin),
                      "args": ["--token", SECRET], "env": [{"name": "PLUGIN_SECRET", "value": SECRET}]}}}]}
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KUBECONFIG": str(tmp_path / "kubeconfig"),
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{_closed_port()}", "GPUDASH_CONFIG": ""}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "generator", "verify", "--skip", "prometheus", "--skip", "exporter",
                           *groups, "--timeout", "6", "--output", "json"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=60)
    took = time.monotonic() - started
    checks = {(c["group"], c["name"]): c for c in json.loads(done.stdout)["checks"]}
    kube = checks[("kube", "reachable")]
    assert kube["status"] == "fail" and "exec plugin 'get-token' did not finish within" in kube["detail"], kube
    assert "and was stopped" in kube["detail"] and str(plugin) in kube["fix"]
    assert SECRET not in done.stdout + done.stderr and "ERROR:root" not in done.stderr, done.stderr  # said once
    time.sleep(0.2)
    assert len(pids.read_text().split()) == (2 if plugin_kind == "child" else 1)
    left = [pid for pid in map(int, pids.read_text().split()) if _alive(pid)]
    for pid in left:  # the test's own sleepers, not left behind when it fails
        os.kill(pid, 9)
    assert left == []
    assert took < 20, took  # a hang detector: verify ended with its deadline, not with the plugin's 300 s
