"""Every module of the package imports on its own, and its imports form no cycle: neither those run
when a module loads nor those inside functions (a cycle hidden in a function is a cycle all the same)."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

import generator

PACKAGE = Path(generator.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _is_type_checking(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): its body never runs; its `else:` always does."""
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


@functools.lru_cache(maxsize=None)
def _parsed(path: Path) -> ast.Module:
    """A module's syntax tree: both cycle checks read every module of the package (read, never changed)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(name: str, path: Path, known: set[str], *, in_functions: bool = False) -> set[str]:
    """The package's modules that `name` imports when it is loaded, and with `in_functions` also those
    its functions import when they run. `if TYPE_CHECKING:` imports never run."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    pending = list(_parsed(path).body)
    while pending:
        node = pending.pop()
        if _is_type_checking(node):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
        elif in_functions or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If)):
            pending.extend(ast.iter_child_nodes(node))
    # Importing a.b.c runs a/__init__.py and a/b/__init__.py first: those packages are imported too.
    targets |= {".".join(t.split(".")[:end]) for t in set(targets) for end in range(1, t.count(".") + 1)}
    return {t for t in targets if t in known and t != name}


def _assert_no_cycle(graph: dict[str, set[str]]) -> None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(target):] + [target]))
            elif target not in state:
                visit(target)
        stack.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


def test_module_level_imports_form_no_cycle():
    modules = _modules()
    _assert_no_cycle({name: _imports(name, path, set(modules)) for name, path in modules.items()})


def test_imports_inside_functions_hide_no_cycle():
    modules = _modules()
    _assert_no_cycle({name: _imports(name, path, set(modules), in_functions=True) for name, path in modules.items()})


def test_the_cycle_check_sees_an_import_inside_a_function(tmp_path):
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("from . import second\n")
    second.write_text("def late():\n    from . import first\n")
    known = {"pkg.first", "pkg.second"}
    graph = {"pkg.first": _imports("pkg.first", first, known, in_functions=True),
             "pkg.second": _imports("pkg.second", second, known, in_functions=True)}
    assert _imports("pkg.second", second, known) == set()
    with pytest.raises(AssertionError, match="import cycle"):
        _assert_no_cycle(graph)


def test_the_cycle_check_sees_an_import_in_the_else_of_type_checking(tmp_path):
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("from . import second\n")
    second.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    pass\nelse:\n    from . import first\n")
    known = {"pkg.first", "pkg.second"}
    assert _imports("pkg.second", second, known) == {"pkg.first"}
    with pytest.raises(AssertionError, match="import cycle"):
        _assert_no_cycle({name: _imports(name, path, known) for name, path in
                          (("pkg.first", first), ("pkg.second", second))})


def test_the_cycle_check_sees_the_package_an_import_runs_first(tmp_path):
    """`from .sub.mod import x` runs sub/__init__.py: a cycle through a package's __init__ is a cycle."""
    (tmp_path / "sub").mkdir()
    first, init, mod = tmp_path / "first.py", tmp_path / "sub" / "__init__.py", tmp_path / "sub" / "mod.py"
    first.write_text("from .sub.mod import x\n")
    init.write_text("from ..first import y\n")
    mod.write_text("x = 1\n")
    known = {"pkg.first", "pkg.sub", "pkg.sub.mod"}
    graph = {"pkg.first": _imports("pkg.first", first, known), "pkg.sub": _imports("pkg.sub", init, known),
             "pkg.sub.mod": _imports("pkg.sub.mod", mod, known)}
    assert "pkg.sub" in graph["pkg.first"]
    with pytest.raises(AssertionError, match="import cycle"):
        _assert_no_cycle(graph)


def test_every_module_imports_first():
    """Each module imported first, with none of the package loaded (what `python -m generator.X` does)."""
    names = sorted(_modules())
    code = ("import importlib, sys\n"
            f"for name in {names!r}:\n"
            "    for loaded in [m for m in sys.modules if m == 'generator' or m.startswith('generator.')]:\n"
            "        del sys.modules[loaded]\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "    except Exception as exc:\n"
            "        print(name, type(exc).__name__, exc)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "", result.stdout


def test_python_m_generator_runs_the_command():
    result = subprocess.run([sys.executable, "-m", "generator", "--version"], capture_output=True, text=True,
                            cwd=PACKAGE.parent)
    assert result.returncode == 0, result.stderr
    assert "gpudash" in result.stdout and generator.__version__ in result.stdout


def test_generate_on_the_otel_pipeline_imports_no_lint_module(tmp_path):
    """generate checks every CloudWatch dashboard's size and, on agent.pipeline: classic, what the agent would feed
    its widgets and alarms: on the default OTel pipeline neither needs lint's rules or its query parser, whose
    import is a tenth of a one-dashboard run; nor Go's regexp syntax (go_regex, go_regex_python and the PromQL parser
    that judges it): the agent's selectors and matchers generate writes are read without it."""
    assert _imported_by_generate(tmp_path, ("generator.lint", "generator.go_regex", "promql_parser")) == []


def _imported_by_generate(tmp_path, prefixes: tuple[str, ...]) -> list[str]:
    """The modules named with one of `prefixes` that a process running `gpudash generate` of the bundled defaults (one
    cluster) has imported once it is done."""
    code = ("import sys\nfrom generator.cli import main\n"
            f"try:\n    main(['generate', '--out', {str(tmp_path / 'build')!r}])\nexcept SystemExit as exit:\n"
            "    assert not exit.code, exit.code\n"
            f"print(sorted(name for name in sys.modules if name.startswith({prefixes!r})))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "build" / "manifest.json").is_file()
    return ast.literal_eval(result.stdout.splitlines()[-1])  # the list the child printed


def test_the_cycle_collector_walks_none_of_what_generate_imports(tmp_path):
    """The `gpudash` command imports its modules with the cycle collector off and then leaves what they made out of
    every collection (entry.run), and generate keeps it off from the imports of the build's modules on: turned on
    while they load, it walked the tens of thousands of objects they make (modules, classes, functions, all living
    until the process ends) over and over, some 35 collections and 38,000 objects for the default build, to find no
    garbage, about 4 ms of a one-dashboard run's CPU."""
    code = ("import gc, sys\n"
            "walked = []\n"
            "gc.callbacks.append(lambda phase, info: walked.append(sum(len(gc.get_objects(g)) for g in "
            "range(info['generation'] + 1))) if phase == 'start' else None)\n"
            "import atexit\n"
            "atexit.register(lambda: print(f'\\nwalked {sum(walked)}', end=''))\n"
            f"sys.argv = ['gpudash', 'generate', '--out', {str(tmp_path / 'build')!r}]\n"
            "from generator.entry import run\n"
            "run()\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "build" / "manifest.json").is_file()
    # a young collection walks about a thousand objects at most (gc.get_threshold()): one or two may happen while
    # click reads the command line
    assert int(result.stdout.rsplit("\n", 1)[-1].removeprefix("walked ")) < 2_000, result.stdout[-200:]


def test_a_build_that_makes_its_rules_here_imports_no_pickle(tmp_path):
    """Only a build that makes its rules in a forked child (forked.Ahead: RULES_AHEAD_FROM clusters or more) sends them
    back pickled: a smaller one, a one-dashboard generate among them, does not pay pickle's import (about 1 ms)."""
    assert [name for name in _imported_by_generate(tmp_path, ("pickle", "_pickle")) if name in ("pickle", "_pickle")] \
        == []
