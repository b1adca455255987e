"""Every link of the README and of docs/ to a file of the repository opens that file, and every `#anchor` is a
heading of the file it names: the README was split into docs/, and a section that moves must take its links along."""

from __future__ import annotations

import re
from collections import Counter

from tests.support import documentation

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _links(path):
    """The link targets of a file, outside fenced code blocks."""
    fenced, found = False, []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            found += LINK.findall(line)
    return found


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for path in documentation.files():
        for target in _links(path):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            file_part, _, fragment = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                broken.append(f"{path.name}: {target} (no such file)")
            elif fragment and fragment not in {documentation.anchor(h) for h in documentation.headings(linked)}:
                broken.append(f"{path.name}: {target} (no such heading in {linked.name})")
    assert not broken, "\n".join(broken)


def test_the_checker_sees_a_broken_anchor(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# Title\n\n[ok](docs/a.md#here) [gone](docs/a.md#elsewhere)\n")
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Here\n\n```sh\n# elsewhere\n```\n")
    monkeypatch.setattr(documentation, "README", tmp_path / "README.md")
    monkeypatch.setattr(documentation, "DOCS", tmp_path / "docs")
    try:
        test_every_relative_link_and_anchor_resolves()
    except AssertionError as failure:
        assert "docs/a.md#elsewhere" in str(failure) and "#here" not in str(failure)
    else:
        raise AssertionError("a link to a heading that does not exist passed")


def test_no_two_headings_of_a_file_share_an_anchor():
    """GitHub numbers a repeated anchor (`-1`): a link written to the first would open the wrong section."""
    for path in documentation.files():
        repeated = [a for a, n in Counter(map(documentation.anchor, documentation.headings(path))).items() if n > 1]
        assert not repeated, (path.name, repeated)


def test_the_readme_is_short_and_starts_with_the_two_commands():
    """A newcomer's first read: the two set-up commands first, then the short path; the depth lives in docs/."""
    readme = documentation.text("README.md")
    first_block = re.search(r"```sh\n(.*?)```", readme, re.S).group(1)
    assert [line.split("#")[0].strip() for line in first_block.splitlines()] == ["make generate", "make test"]
    assert readme.index("```sh") < readme.index("\n## ")
    assert len(readme.splitlines()) <= 400
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", readme))
    assert linked == {path.name for path in documentation.DOCS.glob("*.md")}, "every docs/ file is in the README's map"


def test_the_ci_workflow_that_commits_build_says_how_while_the_repository_ignores_it():
    """README's CI workflow runs `generate --check` on a committed build/; `git add build` in a clone is refused while
    the repository's .gitignore names build/, so the README says to drop that line."""
    ignored = (documentation.REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    section = documentation.text("README.md").split("## CI workflow", 1)[1].split("\n## ", 1)[0]
    if "build/" in ignored or "/build/" in ignored:
        assert "`.gitignore`" in section and "`build/` line" in section, "README: how to commit build/"


def test_the_readme_names_the_python_the_package_requires():
    """`make generate` on an older python3 fails in pip ('requires a different Python'): the README's first step says
    which Python, as pyproject.toml requires it, and how to pick another."""
    import tomllib

    required = tomllib.loads((documentation.REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "requires-python"]
    version = re.fullmatch(r">=\s*(3\.\d+)", required).group(1)
    first_step = documentation.text("README.md").split("**1. Generate and lint.**", 1)[1].split("```", 1)[0]
    assert f"Python {version} or later" in first_step and "PYTHON=" in first_step, first_step
