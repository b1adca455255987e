"""A build generate wrote is read back whole, however large the fleet made its files."""

from __future__ import annotations

import hashlib
import json

from generator.artifacts import build
from generator.output import MANIFEST, read, write
from generator.project import load_project


def test_a_build_file_over_64_mib_is_read_as_the_build_file_it_is(tmp_path):
    """A 1,000-cluster fleet's CloudFormation template passes 64 MiB (the limit for a settings file or a counters
    CSV): `lint --from` and publishing refused the whole build, saying the template 'is not a build file'. Here the
    template carries 65 MiB of the whitespace JSON allows after its value, and the manifest its sha256."""
    built = build(load_project(None))
    folder = tmp_path / "build"
    write(folder, built)
    (stack,) = built.cloudformation
    template = folder / "cloudformation" / f"{stack}.json"
    padded = template.read_bytes() + b" " * (65 * 1024 * 1024)
    template.write_bytes(padded)
    manifest = json.loads((folder / MANIFEST).read_bytes())
    manifest["files"][f"cloudformation/{stack}.json"] = hashlib.sha256(padded).hexdigest()
    (folder / MANIFEST).write_text(json.dumps(manifest))
    del padded

    again = read(folder)

    assert set(again.cloudformation) == set(built.cloudformation)
    resources = again.cloudformation[stack]["Resources"]
    assert resources.keys() == built.cloudformation[stack]["Resources"].keys()
    assert {r["Properties"]["AlarmName"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"} \
        == {a.request["AlarmName"] for a in built.alarms if a.region == built.primary_region}
