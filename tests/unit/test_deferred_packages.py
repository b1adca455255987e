"""clients.deferred: a package put in sys.modules without running its __init__ imports its submodules as usual, runs the
__init__ once (in place) on the first read of any other name, from however many threads, and stays whole after.
Each test runs in a fresh process on a package written for it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.conftest import REPO

_SCRIPT = textwrap.dedent('''
    import json, sys, threading
    sys.path.insert(0, sys.argv[1])
    from generator.clients.deferred import defer

    defer("heavy", names={"heavy": {"Light": "heavy.light"}})
    import heavy
    from heavy import light                      # a submodule: its own code only
    from heavy.light import Light
    before = {"runs": heavy.__dict__.get("RUNS"), "named": heavy.Light is Light, "light": light.Light is Light}
    seen, errors = [], []

    def read():
        try:
            seen.append(heavy.WHOLE)                 # a name only the __init__ defines
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        heavy.NOT_THERE
        missing = None
    except AttributeError as exc:
        missing = str(exc)
    print(json.dumps({"before": before, "seen": seen, "errors": errors, "runs": heavy.RUNS, "missing": missing,
                      "all": sorted(heavy.__all__)}))
''')


def test_a_deferred_package_runs_its_init_once_when_a_name_of_it_is_read(tmp_path):
    package = tmp_path / "heavy"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent('''
        import time
        from heavy.light import Light
        RUNS = globals().get("RUNS", 0) + 1
        time.sleep(0.2)                              # long enough for the other threads to ask meanwhile
        WHOLE = "whole"
        __all__ = ["Light", "WHOLE"]
    '''))
    (package / "light.py").write_text("class Light:\n    pass\n")
    result = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path)], capture_output=True, text=True, cwd=REPO,
                            timeout=60, check=True)
    answer = json.loads(result.stdout.splitlines()[-1])
    assert answer["before"] == {"runs": None, "named": True, "light": True}  # nothing of the __init__ ran yet
    assert answer["errors"] == [] and answer["seen"] == ["whole"] * 8
    assert answer["runs"] == 1
    assert answer["missing"] == "module 'heavy' has no attribute 'NOT_THERE'"
    assert answer["all"] == ["Light", "WHOLE"]
