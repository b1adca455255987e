"""Every module of the package imports on its own, and module-level imports form no cycle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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


def _module_level_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that `name` imports when it is loaded (imports inside functions run later)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If):  # `if TYPE_CHECKING:` imports never run
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
    return {t for t in targets if t in known and t != name}


def test_module_level_imports_form_no_cycle():
    modules = _modules()
    graph = {name: _module_level_imports(name, path, set(modules)) for name, path in modules.items()}
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
