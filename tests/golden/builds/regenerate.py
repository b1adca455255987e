"""Rebuild the golden builds beside this script with the current generator.

    .venv/bin/python tests/golden/builds/regenerate.py

Each `<name>.yaml` here is a settings file and `<name>/` what `gpudash generate --config <name>.yaml`
writes; `defaults/` is the build of the bundled defaults (no settings file). To stay small, a build
other than `defaults/` keeps only the files whose bytes differ from the defaults build: a file its
manifest.json lists but its folder lacks is the defaults build's file. tests/unit/test_golden_builds.py
generates every build into a scratch folder and compares it with these files byte for byte.

Run this only for a change that is meant to change generated output, and commit the result with it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULTS = "defaults"


def names() -> list[str]:
    return [DEFAULTS] + sorted(p.stem for p in HERE.glob("*.yaml"))


def generate(name: str, out: Path) -> dict[str, bytes]:
    """`gpudash generate` for the named build into `out`; returns every file written, by relative path."""
    from click.testing import CliRunner

    from generator.cli import main

    args = ["generate", "--out", str(out)]
    if name != DEFAULTS:
        args += ["--config", str(HERE / f"{name}.yaml")]
    with tempfile.TemporaryDirectory() as cwd, contextlib.chdir(cwd):  # no ./gpudash.yaml is read
        result = CliRunner().invoke(main, args, env={"GPUDASH_CONFIG": None}, catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"gpudash generate for {name} exited {result.exit_code}: {result.stderr}")
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def stored(name: str) -> dict[str, bytes]:
    """The golden build as it would be generated: its own files, the rest from the defaults build."""
    folder = HERE / name
    own = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    if name == DEFAULTS or "manifest.json" not in own:
        return own
    listed = json.loads(own["manifest.json"])["files"]
    defaults = HERE / DEFAULTS
    return {**{path: (defaults / path).read_bytes() for path in listed if path not in own
               and (defaults / path).is_file()}, **own}


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        builds = {name: generate(name, Path(scratch, name)) for name in names()}
    for name, files in builds.items():
        shutil.rmtree(HERE / name, ignore_errors=True)
        for path, data in files.items():
            if name != DEFAULTS and builds[DEFAULTS].get(path) == data:
                continue
            target = HERE / name / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        print(f"{name}: {len(files)} files", file=sys.stderr)


if __name__ == "__main__":
    main()
