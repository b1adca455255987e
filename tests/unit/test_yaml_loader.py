"""YAML is read through libyaml only where that libyaml stops deep nesting. PyYAML's wheels bundle libyaml 0.2.6 from
6.0.4 on; a PyYAML built from source links the system's libyaml, and 0.2.5 (PyYAML 6.0 to 6.0.3's wheels, Debian 12)
composes settings nested 50,000 deep until the C stack runs out: the process died of a segmentation fault, where
gpudash says "nested too deeply" and exits 2 (measured with PyYAML 6.0.3's wheel)."""

from __future__ import annotations

import yaml

from generator.reading import yaml_loader

DEEP_SETTINGS = "labels: " + "[" * 50_000 + "]" * 50_000 + "\n"


def test_an_older_libyaml_is_not_read_with_and_deep_settings_are_refused_all_the_same(cli, tmp_path, monkeypatch):
    assert yaml_loader() is getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # this machine's: the fast one where it can
    monkeypatch.setattr(yaml._yaml, "get_version", lambda: (0, 2, 5))  # as a PyYAML linking libyaml 0.2.5 reports
    assert yaml_loader() is yaml.SafeLoader
    (tmp_path / "gpudash.yaml").write_text(DEEP_SETTINGS)
    monkeypatch.chdir(tmp_path)
    code, _, stderr = cli("generate", "--out", "build")
    assert code == 2 and "nested too deeply" in stderr, stderr
