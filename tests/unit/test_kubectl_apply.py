"""The build's k8s/ files are applied with one command, as the README and docs write it and as verify's and lint's
fixes say it (output.KUBECTL_APPLY: server-side apply, which takes every object the build holds whatever its size)."""

from __future__ import annotations

import re

from generator.output import KUBECTL_APPLY
from tests.conftest import REPO

_APPLY_OF_BUILD = re.compile(r"kubectl apply\b[^`\n]*?-f build/k8s/\S+")


def test_every_kubectl_apply_of_the_build_in_the_documentation_is_gpudashs_command():
    found = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        found += [(path.name, m.group(0)) for m in _APPLY_OF_BUILD.finditer(path.read_text())]
    assert len(found) >= 5  # the README's deploy steps and CI job, the docs' files
    assert [(name, text) for name, text in found if not text.startswith(KUBECTL_APPLY + " ")] == []


def test_verifys_fix_for_a_missing_agent_configmap_is_the_documented_command(tmp_path):
    from generator.checks import kube
    from generator.project import load_project

    project = load_project(None)
    check = kube._unknown_configmap(lambda name: None, "amazon-cloudwatch", "prometheus-cwagentconfig",
                                    "cwagentconfig.json", "unknown", project)
    assert check.fix.startswith("kubectl apply --server-side -f build/k8s/cwagent-prometheus-config-<cluster>.yaml ")
