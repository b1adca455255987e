"""Every command the README and docs/ name is one gpudash has: a newcomer who runs a command the documentation names
gets `No such command` (docs/commands.md said `diff` goes on where `push` refuses; docs/cloudwatch.md that `publish`
refuses a project, both commands gpudash never had)."""

from __future__ import annotations

import click

from generator.cli import main
from tests.support import documentation


def _commands() -> set[str]:
    return set(main.list_commands(click.Context(main)))


def test_every_command_the_documentation_names_is_a_command():
    commands = _commands()
    assert {"generate", "lint", "plan", "push", "apply", "verify"} <= commands
    found = {path.name: documentation.commands_named(path.read_text(encoding="utf-8"), commands)
             for path in documentation.files()}
    assert {name: named for name, named in found.items() if named} == {}


def test_the_checker_sees_a_command_that_is_not_there():
    text = ("Run `gpudash difff --from build`, then:\n\n```sh\nexport A=1\nGPUDASH_CONFIG=x .venv/bin/gpudash --debug "
            "publish --dry-run\ngpudash plan\n```\n\n`--dry-run`, `diff` and `generate` go on; `kube`, `exporter` and "
            "`cloudwatch` are groups; the version message is `gpudash sha256:<hash>`.\n")
    assert [word for _, word in documentation.commands_named(text, _commands())] == ["publish", "difff", "diff"]
