"""`gpudash verify` runs every group but cloudwatch in a child process where another CPU is free (botocore's import and
client are about half of a run, the Kubernetes client's and requests' the other half; the child takes the other CPU),
and every group in its own process on a busy machine. These run verify.run in a fresh single-threaded process, as the
command does, with stand-in groups that say which process made each check; the machine's load is told, not read."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.conftest import REPO

_SCRIPT = textwrap.dedent('''
    import json, os, sys, time
    from generator import awaiting, forked, redact, verify
    from generator.checks.result import OK, Check
    from generator.clients.options import Options

    class Unbuildable(Exception):  # pickles, but unpickling calls it with its message alone
        def __init__(self, what, where):
            super().__init__(f"{what} in {where}")

    def group(name, secret=None, hang=False, bug=False, unbuildable=False):
        def checks(project, options):
            if secret:
                redact.secret(secret)
            yield Check(name, "first", OK, f"pid {os.getpid()} {secret or ''}".strip())
            if bug:
                raise KeyError("a bug in the child")
            if unbuildable:
                raise Unbuildable("a bug", "the child")
            if hang == "waits":  # told what it waits on, then waited on it (a kubeconfig exec plugin)
                awaiting.tell("the kubeconfig's exec plugin 'get-token'", "run it yourself")
            if hang:
                time.sleep(60)
            loaded = [g for g in verify.GROUPS if f"generator.checks.{g}" in sys.modules]  # this process's
            yield Check(name, "second", OK, f"done {','.join(loaded)}")
        return checks

    mode = sys.argv[1]
    forked.spare_cpu = lambda: mode != "busy"  # another CPU free, or none (whatever this machine's load)
    if mode == "nofork":  # the system gives no process: the groups run here
        def refuse():
            raise BlockingIOError(11, "Resource temporarily unavailable")
        os.fork = refuse
    hang = {"hang": True, "waits": "waits"}.get(mode, False)
    runners = {"kube": group("kube", secret="kube-token-123456", hang=hang, bug=mode == "bug",
                             unbuildable=mode == "unbuildable"),
               "exporter": group("exporter"), "prometheus": group("prometheus"), "cloudwatch": group("cloudwatch")}
    verify._runners = lambda: runners
    # the hang's deadline leaves the child time to import its groups' modules and send its first check on a loaded
    # machine (at 2 s, under a whole suite at load ~12, the first check itself came after the deadline)
    options = Options(timeout=6 if hang else 30)
    try:
        checks = verify.run(None, options, verify.GROUPS, processes=True)
    except (KeyError, RuntimeError) as exc:
        print(json.dumps({"bug": str(exc)}))
        sys.exit(0)
    child = int(next(c.detail for c in checks if c.group == "kube").split()[1])
    try:
        os.kill(child, 0)
        gone = False
    except ProcessLookupError:  # stopped and collected: not even a zombie left
        gone = True
    print(json.dumps({"parent": os.getpid(), "child_gone": gone,
                      "checks": [[c.group, c.name, c.status, redact.text(c.detail)] for c in checks]}))
''')


def _run(mode: str) -> dict:
    result = subprocess.run([sys.executable, "-c", _SCRIPT, mode], capture_output=True, text=True, cwd=REPO,
                            timeout=120, check=True)
    return json.loads(result.stdout.splitlines()[-1])


def test_the_groups_but_cloudwatch_run_in_a_child_and_their_checks_and_secrets_come_back():
    answer = _run("ok")
    by_group = {group: [c for c in answer["checks"] if c[0] == group] for group in ("kube", "exporter", "prometheus",
                                                                                    "cloudwatch")}
    assert [c[1] for c in answer["checks"]] == ["first", "second"] * 4  # every check, in the groups' order
    pids = {group: checks[0][3].split()[1] for group, checks in by_group.items()}
    assert pids["cloudwatch"] == str(answer["parent"])
    assert pids["kube"] == pids["exporter"] == pids["prometheus"] != str(answer["parent"])
    assert by_group["kube"][0][3].endswith("***")  # a secret the child learnt is masked where it is printed
    assert answer["child_gone"]
    # each process imports the checks of the groups it runs, and only those: the parent (the longer side, botocore's
    # import and client) never the child's three modules
    assert {group: checks[1][3] for group, checks in by_group.items()} == {
        "kube": "done kube,exporter,prometheus", "exporter": "done kube,exporter,prometheus",
        "prometheus": "done kube,exporter,prometheus", "cloudwatch": "done cloudwatch"}


def test_a_child_past_the_deadline_is_stopped_and_its_group_reported():
    answer = _run("hang")
    kube = [c for c in answer["checks"] if c[0] == "kube"]
    assert [c[1] for c in kube] == ["first", "reachable"] and kube[1][2] == "fail"
    assert "no answer within 6 s" in kube[1][3]
    assert answer["child_gone"]


def test_a_group_past_the_deadline_names_what_it_told_it_waits_on():
    """A group that told the run what it waits on (the kube group, on a kubeconfig exec plugin) is reported by that
    name at the deadline, through the child's pipe, not as "no answer": on a loaded machine the run's deadline can come
    before the plugin's own limit."""
    answer = _run("waits")
    kube = [c for c in answer["checks"] if c[0] == "kube"]
    assert [c[1] for c in kube] == ["first", "reachable"] and kube[1][2] == "fail"
    assert kube[1][3] == ("the kubeconfig's exec plugin 'get-token' did not finish within 6 s and was stopped "
                          "(after 1 checks)")
    assert answer["child_gone"]


def test_a_bug_in_the_child_is_raised_in_the_command():
    assert "a bug in the child" in _run("bug")["bug"]


def test_a_bug_in_the_child_that_cannot_be_rebuilt_here_is_raised_as_its_text_not_waited_out():
    """A bug whose exception pickles but cannot be unpickled (an __init__ taking more than its message) killed the
    relay: the command waited out its whole --timeout and called the child's groups unanswered (exit 1)."""
    assert _run("unbuildable")["bug"].startswith("Unbuildable: a bug in the child (")


def test_a_child_stopped_mid_message_leaves_its_groups_unanswered_not_a_traceback():
    """The child killed at the deadline while writing a check: what it sent whole comes back, the rest is
    the groups' missing answer (the relay must not die on the cut message)."""
    import os
    import pickle
    import queue

    from generator import verify
    from generator.checks.result import OK, Check

    reader, writer = os.pipe()
    whole = pickle.dumps(("kube", Check("kube", "first", OK, "sent whole"), []))
    os.write(writer, len(whole).to_bytes(8, "big") + whole + (500).to_bytes(8, "big") + b"cut short")
    os.close(writer)
    out: queue.Queue = queue.Queue()
    verify._relay(reader, ("kube", "exporter"), out)
    items = [out.get_nowait() for _ in range(out.qsize())]
    assert items[0] == ("kube", Check("kube", "first", OK, "sent whole"))
    assert [(group, str(item)) for group, item in items[1:]] == [
        ("exporter", "the exporter checks ended without an answer"), ("kube", "the kube checks ended without an answer")]


def test_no_process_to_be_had_runs_every_group_here():
    answer = _run("nofork")
    assert [c[1] for c in answer["checks"]] == ["first", "second"] * 4
    assert {c[3].split()[1] for c in answer["checks"] if c[1] == "first"} == {str(answer["parent"])}


def test_no_cpu_to_spare_runs_every_group_here():
    """On a busy machine (no CPU left idle by the last minute's load) the child would only take turns with this process,
    and the fork costs CPU of its own (each process copies the pages it writes; what the sides import is not shared):
    every group runs here, in threads, its checks as the child's would be."""
    answer = _run("busy")
    assert [c[1] for c in answer["checks"]] == ["first", "second"] * 4
    assert {c[3].split()[1] for c in answer["checks"] if c[1] == "first"} == {str(answer["parent"])}
    assert {c[3] for c in answer["checks"] if c[1] == "second"} == {"done kube,exporter,prometheus,cloudwatch"}
    assert answer["checks"][0][3].endswith("***")  # the kube group's secret, learnt here, masked as well


_SHARED = textwrap.dedent('''
    import json, os, sys
    from pathlib import Path
    from generator import forked, verify
    from generator.checks.result import OK, Check
    from generator.clients.options import Options
    from generator.project import load_project

    SHARED = ("generator.data_missing", "generator.clients.kube", "generator.render.agent",
              "generator.render.cloudwatch")

    def group(name):
        def checks(project, options):
            yield Check(name, "first", OK, ",".join(m for m in SHARED if m in sys.modules))
        return checks

    verify._runners = lambda: {g: group(g) for g in verify.GROUPS}
    forked.spare_cpu = lambda: True  # another CPU free (whatever this machine's load)
    config = Path(sys.argv[1])
    config.write_text("clusters: [{name: a, region: us-east-1}]\\n" + (
        "cloudwatch: {source: container-insights}\\n" if sys.argv[2] == "addon" else ""))
    checks = verify.run(load_project(config), Options(timeout=30), verify.GROUPS, processes=True)
    print(json.dumps({c.group: c.detail for c in checks}))
''')


def test_what_both_processes_read_is_imported_once_before_the_fork(tmp_path):
    """The cloudwatch group (this process) and the kube group (the child) both read the data-missing alarm's settings
    and the Kubernetes client's module, and with the classic agent the agent configuration's and the CloudWatch
    queries' renderers: imported before the fork, each process finds them made (about 60 ms of CPU less in all)."""
    def loaded(source: str) -> dict:
        result = subprocess.run([sys.executable, "-c", _SHARED, str(tmp_path / "gpudash.yaml"), source],
                                capture_output=True, text=True, cwd=REPO, timeout=120, check=True)
        return json.loads(result.stdout.splitlines()[-1])

    everything = "generator.data_missing,generator.clients.kube,generator.render.agent,generator.render.cloudwatch"
    assert loaded("classic") == dict.fromkeys(("kube", "exporter", "prometheus", "cloudwatch"), everything)
    # with the add-on, the cloudwatch group renders no agent configuration and reads no published sets: this process
    # does not import their renderers for the child (whose kube checks import the agent's for their own reasons)
    assert loaded("addon")["cloudwatch"] == "generator.data_missing,generator.clients.kube"
