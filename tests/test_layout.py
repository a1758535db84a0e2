"""The package's layout, checked from the sources (docs/design.md, "Layout").

- imports go one way: the public API and the runner import the engine; the engine
  imports nothing of cartjit outside ``cartjit.engine``; no module imports the runner
  but the runner itself and the command line; no import cycle among the engine's modules;
- the speed machinery is behind one door: only ``cartjit.engine.speed`` talks to Numba's
  compiler (``njit``, intrinsics, the dispatcher, LLVM IR);
- no function takes more than fourteen parameters (the estimators' ``__init__`` aside,
  the single trees' and the forests': scikit-learn wants every hyper-parameter there);
- no engine module is longer than 1,200 lines.
"""
from __future__ import annotations

import ast
from pathlib import Path

import cartjit

ROOT = Path(cartjit.__file__).resolve().parent
MAX_PARAMETERS = 14
MAX_MODULE_LINES = 1200


def _module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("cartjit",) + parts)


def _imports(path):
    """Modules imported by ``path`` (relative imports resolved; ``from . import x`` gives
    the submodule ``x``), with the names taken from each ``from`` import."""
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                found.setdefault(a.name, set())
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            if node.level and node.module is None:
                for a in node.names:
                    found.setdefault(f"{mod}.{a.name}", set())
            else:
                found.setdefault(mod, set()).update(a.name for a in node.names)
    return found


def _sources(folder):
    return sorted(p for p in folder.glob("*.py"))


def test_the_engine_imports_nothing_of_cartjit_outside_itself():
    engine = ROOT / "engine"
    for path in _sources(engine):
        outside = {m for m in _imports(path)
                   if m.startswith("cartjit") and not m.startswith("cartjit.engine")}
        assert not outside, f"{path.name} imports {sorted(outside)}"


def test_the_engine_s_modules_import_without_a_cycle():
    engine = ROOT / "engine"
    names = {_module_name(p) for p in _sources(engine)}
    graph = {_module_name(p): {m for m in _imports(p) if m in names} - {_module_name(p)}
             for p in _sources(engine)}
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for d in sorted(graph[m]):
            assert state.get(d) != "open", f"import cycle: {' -> '.join(stack + [m, d])}"
            if d not in state:
                visit(d, stack + [m])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    # the step modules sit on the records and the speed machinery, never the reverse
    assert not {m for m in graph["cartjit.engine.speed"] if m.startswith("cartjit.")}
    assert graph["cartjit.engine.records"] <= set()


def test_only_the_runner_and_the_command_line_import_the_runner():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] == "experiments" or path.name == "__main__.py":
            continue
        runner = {m for m in _imports(path) if m.startswith("cartjit.experiments")}
        assert not runner, f"{rel} imports {sorted(runner)}"


def test_only_the_speed_module_talks_to_numba_s_compiler():
    compiler = {"njit", "jit", "intrinsic", "overload", "_dispatcher", "cgutils"}
    for path in _sources(ROOT / "engine"):
        if path.stem == "speed":
            continue
        for mod, names in _imports(path).items():
            assert not mod.startswith("llvmlite"), f"{path.name} imports {mod}"
            if mod.startswith("numba"):
                assert not names & compiler, f"{path.name} imports {sorted(names & compiler)}"


def _parameters(fn):
    a = fn.args
    n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
    n += (a.vararg is not None) + (a.kwarg is not None)
    if a.args and a.args[0].arg in ("self", "cls"):
        n -= 1
    return n


def test_no_function_takes_more_than_fourteen_parameters():
    long = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):  # methods and nested functions too
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if fn.name == "__init__" and path.name in ("estimators.py", "ensemble.py"):
                continue  # scikit-learn estimators take every hyper-parameter there
            if _parameters(fn) > MAX_PARAMETERS:
                long.append(f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name} "
                            f"({_parameters(fn)})")
    assert not long, long


def test_the_parameter_count_sees_a_long_signature():
    fn = ast.parse("def f(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o): pass").body[0]
    assert _parameters(fn) == 15
    method = ast.parse("def f(self, *args, key=1, **kw): pass").body[0]
    assert _parameters(method) == 3


def test_no_engine_module_is_longer_than_one_sitting():
    long = {p.name: n for p in _sources(ROOT / "engine")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, long
