"""A folder path that cannot name a folder at all, given to a command that writes a build or a site there (generate
--out, preview --out, init-config) or reads a build (--from): under a regular file, through a link that leads round in
a loop, a name or a whole path longer than the system takes. Each is one message saying what the path is, where, and
what to do, exit 2, nothing made or changed around it; never the first system call's words ("File exists" from a
mkdir under a file), an internal error, or "the build folder does not exist; run generate --out" for a path generate
cannot write either."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

UNDER_A_FILE = "on this path, is a file, not a folder: no folder can be made or read under it"
LOOP = "that leads round in a loop (to itself, or through other links back to it): no folder is there"
DANGLING = "gpudash writes or reads nothing through it"
PATHS = {  # the path given -> what its one message says
    "afile/sub": f"afile, {UNDER_A_FILE}",
    "afile/sub/deeper": f"afile, {UNDER_A_FILE}",
    "nowhere/../afile/sub": f"afile, {UNDER_A_FILE}",  # past a `..` after a folder that does not exist
    "afile/..": f"afile, {UNDER_A_FILE}",  # the system refuses it (ENOTDIR): never read as afile's folder
    "afile/sub/../../site": f"afile, {UNDER_A_FILE}",  # refused too: the build was written to ./site
    "loop1": f"a link {LOOP}",
    "loop1/sub": f"loop1, on this path, is a link {LOOP}",
    # a link to a place that does not exist (mistyped, or removed): generate made that place and wrote there
    "dangling": f"a link to gone{os.sep}target, which does not exist: {DANGLING}",
    "dangling/sub": f"dangling, on this path, is a link to gone{os.sep}target, which does not exist: {DANGLING}",
    "x" * 300: "the name xxxxxxxxxxxxxxxxxxxxxxxx... is 300 bytes long, where the file system takes at most 255",
    "/".join(["d" * 200] * 30): "more than the system takes (at most 4096)",
}
IDS = ["under-a-file", "two-under-a-file", "under-a-file-past-dotdot", "dotdot-after-a-file", "dotdot-under-a-file", "link-loop", "under-a-link-loop",
       "dangling-link", "under-a-dangling-link", "name-too-long", "path-too-long"]
COMMANDS = {  # the command, given the path
    "generate --out": lambda path: ("generate", "--out", path),
    "lint --from": lambda path: ("lint", "--from", path),
    "plan --from": lambda path: ("plan", "--no-grafana", "--no-cloudwatch", "--from", path),
    "push --from": lambda path: ("push", "--dry-run", "--skip-verify", "--from", path),
    "apply --from": lambda path: ("apply", "--dry-run", "--skip-verify", "--from", path),
    "preview --out": lambda path: ("preview", "--sample", "--out", path),
    "preview --from": lambda path: ("preview", "--sample", "--from", path),
    "init-config": lambda path: ("init-config", path),
}
# every path with the commands that write a build and read one; the others with a file and a loop on the path
CASES = [(command, path, said) for command in COMMANDS for (path, said), kind in zip(PATHS.items(), IDS)
         if command in ("generate --out", "lint --from")
         or kind in ("under-a-file", "under-a-file-past-dotdot", "dotdot-after-a-file", "under-a-link-loop",
                     "under-a-dangling-link") or (kind == "dangling-link" and command != "init-config")]


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("command, path, said", CASES,
                         ids=[f"{command}:{IDS[list(PATHS).index(path)]}" for command, path, _ in CASES])
def test_a_path_that_cannot_name_a_folder_is_one_clear_input_error(tmp_path, monkeypatch, cli, command, path, said):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUDASH_CONFIG", raising=False)
    (tmp_path / "afile").write_text("a person's notes\n")
    os.symlink("loop2", tmp_path / "loop1")
    os.symlink("loop1", tmp_path / "loop2")
    os.symlink(os.path.join("gone", "target"), tmp_path / "dangling")
    before = _tree(tmp_path)
    code, stdout, stderr = cli(*COMMANDS[command](path))
    errors = [line for line in stderr.splitlines() if line.startswith("error")]
    assert code == 2 and "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert len(errors) == 1 and said in errors[0] and "\n  fix: " in stderr, stderr
    assert (tmp_path / "afile").read_text() == "a person's notes\n" and _tree(tmp_path) == before


@pytest.mark.parametrize("kind, said", [
    ("file", "the output path is a file, not a directory"),
    ("fifo", "the output path is a file, not a directory"),
    ("foreign", "the output directory holds files gpudash did not write"),
])
def test_preview_says_an_out_it_will_not_write_before_drawing(tmp_path, monkeypatch, cli, kind, said):
    """preview draws every dashboard (minutes on a real Prometheus) and writes the site last: an --out that is a file
    (or a named pipe), or a folder of someone else's files, was said only then, after the drawing. Said first now, as a
    path under a file is: exit 2, nothing touched. The Prometheus given refuses connections, so a preview that goes on
    to draw fails on that instead (exit 3)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUDASH_CONFIG", raising=False)
    out = tmp_path / "site"
    if kind == "file":
        out.write_text("a person's notes\n")
    elif kind == "fifo":
        os.mkfifo(out)
    else:
        out.mkdir()
        (out / "notes.txt").write_text("a person's notes\n")
    before = _tree(tmp_path)
    code, stdout, stderr = cli("preview", "--prometheus-url", "http://127.0.0.1:9", "--out", "site")
    errors = [line for line in stderr.splitlines() if line.startswith("error")]
    assert code == 2 and "Traceback" not in stderr and "Prometheus" not in stderr, stderr
    assert len(errors) == 1 and said in errors[0] and "\n  fix: " in stderr, stderr
    assert _tree(tmp_path) == before


def test_generate_makes_no_folder_named_before_a_dotdot(tmp_path, monkeypatch, cli):
    """`generate --out nowhere/../site`: the system reads `nowhere/..` only once `nowhere` exists, so the folders were
    made one by one (nowhere, then site): the build went to `site` and an empty `nowhere` was left beside it, a folder
    no one asked for. The build goes to the folder the path names (`site`), and nothing else is made; --from reads it
    there (it said "the build folder does not exist; run generate --out nowhere/../site first")."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUDASH_CONFIG", raising=False)
    code, stdout, stderr = cli("generate", "--out", "nowhere/../site")
    assert code == 0, stderr
    assert (tmp_path / "site" / "manifest.json").is_file() and not (tmp_path / "nowhere").exists()
    code, stdout, stderr = cli("lint", "--from", "nowhere/../site")  # read back from the folder it names
    assert code == 0 and "does not exist" not in stderr, stderr
    code, stdout, stderr = cli("generate", "--check", "--out", "nowhere/../site")  # the build there is the one
    assert code == 0 and "missing" not in stdout, stdout                           # compared (it said all missing)
    assert cli("init-config", "nowhere/../gpudash.yaml")[0] == 0 and (tmp_path / "gpudash.yaml").is_file()
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("given, said", [("", "is empty: it names no folder"),
                                         ("-", "'-' names no folder here: gpudash reads and writes builds as folders")],
                         ids=["empty", "dash"])
@pytest.mark.parametrize("command", [("generate", "--out"), ("preview", "--out"), ("lint", "--from"),
                                     ("preview", "--from"), ("plan", "--from"), ("push", "--from"),
                                     ("apply", "--from")])
def test_an_empty_folder_option_is_a_usage_error(tmp_path, monkeypatch, cli, command, given, said):
    """`--out "$OUT"` or `--from "$BUILD"` with the variable unset: an empty --out named the current folder (generate
    wrote its build there, exit 0), an empty --from read as no --from (plan, push and apply published a build generated
    from the definitions, not the build named; lint judged and preview drew that one). Now each is a usage error
    naming the option, exit 2, nothing written and nothing sent. So is `-`, which names standard output or input to
    many tools: generate made a folder named "-" (and --from read one)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUDASH_CONFIG", raising=False)
    code, stdout, stderr = cli(*command, given)
    assert code == 2 and "Traceback" not in stderr, stderr
    assert f"Invalid value for '{command[1]}': {said}" in stderr, stderr
    assert _tree(tmp_path) == []


def test_init_config_onto_a_link_to_a_file_not_there_says_the_path_is_taken(tmp_path, monkeypatch, cli):
    """`init-config cfg.yaml` where cfg.yaml is a link to real.yaml, not made yet (a dotfiles manager's link): it said
    "the file exists already" (nothing is written through a link), then the dangling-link check for folders said
    "make the folder it points to, point the link at a folder", for a path that names a file. It says the path is taken
    again: exit 2, nothing written."""
    monkeypatch.chdir(tmp_path)
    os.symlink("real.yaml", tmp_path / "cfg.yaml")
    code, stdout, stderr = cli("init-config", "cfg.yaml")
    assert code == 2 and "the file exists already" in stderr and "folder" not in stderr, stderr
    assert _tree(tmp_path) == ["cfg.yaml"] and not (tmp_path / "real.yaml").exists()
