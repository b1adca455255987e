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


def _still_alive(pids) -> list[int]:
    """Of `pids`, those alive once a SIGKILL sent to them has had its moment to land (polled, up to 5 s)."""
    pids = list(pids)
    ends = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < ends:
        time.sleep(0.02)
    return [pid for pid in pids if _alive(pid)]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _kubeconfig(tmp_path: Path, plugin: dict) -> None:
    """tmp_path/kubeconfig: a cluster at a closed port, its user's token from the exec `plugin` (command, args...)."""
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{_closed_port()}"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", **plugin}}}]}))


# A wrapper that execs its command, and one that does not (gke-gcloud-auth-plugin running gcloud, kubelogin): the
# child it starts is stopped with it.
PLUGINS = {"exec": "echo $$ >> {pids}\nexec sleep 300\n",
           "child": "echo $$ >> {pids}\nsleep 300 &\necho $! >> {pids}\nwait\n"}


# Which limit stops the plugin first: its own (the run's time left less EXEC_MARGIN), or, on a loaded machine, the
# run's deadline before the plugin's limit (the margin made negative here): the check names the plugin either way.
# Another CPU is free whatever this machine's load: verify forks its child process as on an idle machine.
SPARE_CPU = "from generator import forked; forked.spare_cpu = lambda: True; "
FIRST = {"plugin's limit": [sys.executable, "-c", SPARE_CPU + "from generator.entry import run; run()"],
         "run's deadline": [sys.executable, "-c", SPARE_CPU + "from generator.clients import kube; "
                            "kube.EXEC_MARGIN = -60; from generator.entry import run; run()"]}


@pytest.mark.parametrize("first", FIRST)
@pytest.mark.parametrize("plugin_kind", PLUGINS)
@pytest.mark.parametrize("groups", [("--skip", "cloudwatch"), ()], ids=["threads", "child process"])
def test_a_hung_exec_plugin_is_stopped_at_the_deadline_and_named(tmp_path, groups, plugin_kind, first):
    pids = tmp_path / "pids"
    plugin = tmp_path / "get-token"
    plugin.write_text("#!/bin/sh\n" + PLUGINS[plugin_kind].format(pids=pids))
    plugin.chmod(0o755)
    _kubeconfig(tmp_path, {"command": str(plugin), "args": ["--token", SECRET],
                           "env": [{"name": "PLUGIN_SECRET", "value": SECRET}]})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KUBECONFIG": str(tmp_path / "kubeconfig"),
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{_closed_port()}", "GPUDASH_CONFIG": ""}
    done = subprocess.run([*FIRST[first], "verify", "--skip", "prometheus", "--skip", "exporter",
                           *groups, "--timeout", "6", "--output", "json"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=60)
    checks = {(c["group"], c["name"]): c for c in json.loads(done.stdout)["checks"]}
    kube = checks[("kube", "reachable")]
    assert kube["status"] == "fail" and "exec plugin 'get-token' did not finish within" in kube["detail"], kube
    assert "and was stopped" in kube["detail"] and str(plugin) in kube["fix"]
    assert SECRET not in done.stdout + done.stderr and "ERROR:root" not in done.stderr, done.stderr  # said once
    assert len(pids.read_text().split()) == (2 if plugin_kind == "child" else 1)
    left = _still_alive(map(int, pids.read_text().split()))
    for pid in left:  # the test's own sleepers, not left behind when it fails
        os.kill(pid, 9)
    assert left == []  # (verify ended within the run's 60 s, so with its deadline, not with the plugin's 300 s)


EXPIRED = ("An error occurred (ExpiredToken) when calling the GetCallerIdentity operation: The security token included "
           "in the request is expired")


def _verify_kube_only(tmp_path: Path, plugin: Path) -> subprocess.CompletedProcess:
    """verify's kube group as a process of its own, the kubeconfig's token from `plugin` (given a secret argument)."""
    _kubeconfig(tmp_path, {"command": str(plugin), "args": ["--token", SECRET]})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KUBECONFIG": str(tmp_path / "kubeconfig"), "GPUDASH_CONFIG": ""}
    return subprocess.run([sys.executable, "-m", "generator", "verify", "--skip", "prometheus", "--skip", "exporter",
                           "--skip", "cloudwatch", "--timeout", "20", "--output", "json"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=60)


def test_a_failing_exec_plugin_is_named_with_why_it_failed(tmp_path):
    """`aws eks get-token` with expired credentials exits 255 saying why on stderr. The client logs that as
    `ERROR:root:exec: process returned 255. ...` on stderr and sends its requests without a token, so verify said
    "cannot reach the Kubernetes API (MaxRetryError)" (or "refused access (401)"): the one line that told the cause
    was a stray log line. The kube check says the plugin failed, its command (never its arguments), exit code and
    last stderr line, with what to do; the log line is not printed besides."""
    plugin = tmp_path / "get-token"
    plugin.write_text(f"#!/bin/sh\necho 'retrying' >&2\necho '{EXPIRED}' >&2\nexit 255\n")
    plugin.chmod(0o755)
    done = _verify_kube_only(tmp_path, plugin)
    kube = {(c["group"], c["name"]): c for c in json.loads(done.stdout)["checks"]}[("kube", "reachable")]
    assert (kube["status"], kube["detail"]) == (
        "fail", f"the kubeconfig's exec plugin 'get-token' failed (exit 255): {EXPIRED}"), kube
    assert kube["fix"].startswith(f"run '{plugin}' with the kubeconfig's arguments yourself to see why"), kube
    assert "ERROR:root" not in done.stderr and SECRET not in done.stdout + done.stderr, done.stderr
    assert done.returncode == 1


def test_an_exec_plugin_failing_when_its_token_expires_mid_run_is_named_with_why(tmp_path):
    """The plugin gave a token at load that expires at once (an EKS token lives 15 minutes; a long run outlives it), and
    fails when the client runs it again for a fresh one (the AWS credentials expired meanwhile). The client logged that
    as `ERROR:root:exec: process returned 255. ...` and sent the request with the expired token: verify said "cannot
    reach the Kubernetes API" (or "refused access (401)") beside the stray log line. The kube check says the plugin
    failed and why, as at load, and the log line is not printed besides."""
    plugin = tmp_path / "get-token"
    marker = tmp_path / "ran"
    token = json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                        "status": {"token": "k8s-aws-v1.expiring", "expirationTimestamp": "2000-01-01T00:00:00Z"}})
    plugin.write_text(f"#!/bin/sh\nif [ ! -e {marker} ]; then touch {marker}; echo '{token}'; exit 0; fi\n"
                      f"echo '{EXPIRED}' >&2\nexit 255\n")
    plugin.chmod(0o755)
    done = _verify_kube_only(tmp_path, plugin)
    assert marker.exists(), done.stderr  # (the plugin gave its token at load)
    kube = {(c["group"], c["name"]): c for c in json.loads(done.stdout)["checks"]}[("kube", "reachable")]
    assert (kube["status"], kube["detail"]) == (
        "fail", f"the kubeconfig's exec plugin 'get-token' failed (exit 255): {EXPIRED}"), kube
    assert "ERROR:root" not in done.stderr and SECRET not in done.stdout + done.stderr, done.stderr


def test_the_deadline_falling_while_a_group_imports_the_kubernetes_module_is_no_internal_error(monkeypatch):
    """verify's end stops the exec plugins of the Kubernetes client's module when it is in sys.modules; a group's
    thread still executing that module's body (a 1-second deadline on a loaded machine) leaves it there half made,
    without stop_exec_plugins: the run ends with its checks, not with an AttributeError (seen in a fresh-clone CI)."""
    import types

    from generator import verify

    half = types.ModuleType("generator.clients.kube")
    half._RUNNING = set()
    monkeypatch.setitem(sys.modules, "generator.clients.kube", half)
    assert verify._stop_exec_plugins() is None
    started = types.ModuleType("generator.clients.kube")
    stopped = []
    started.stop_exec_plugins = lambda: stopped.append(True)
    monkeypatch.setitem(sys.modules, "generator.clients.kube", started)
    verify._stop_exec_plugins()
    assert stopped == [True]


def test_an_api_server_that_refuses_the_connection_is_named_with_its_address(tmp_path, cli, monkeypatch):
    """A kubeconfig whose server is down (or a port-forward that ended) said "cannot reach the Kubernetes API
    (MaxRetryError)": urllib3's class name, and not which server. It names the server and the reason."""
    port = _closed_port()
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"https://user:{SECRET}@127.0.0.1:{port}"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = cli("verify", "--skip", "prometheus", "--skip", "exporter", "--skip", "cloudwatch",
                               "--timeout", "10", "--output", "json",
                               env={"KUBECONFIG": str(tmp_path / "kubeconfig"), "GPUDASH_CONFIG": None})
    kube = {(c["group"], c["name"]): c for c in json.loads(stdout)["checks"]}[("kube", "reachable")]
    assert code == 1 and kube["detail"] == f"cannot reach the Kubernetes API at https://***@127.0.0.1:{port} " \
                                           "(connection refused)", kube
    assert SECRET not in stdout + stderr
