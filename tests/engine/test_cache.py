"""The notices that kernels are compiling (one per kind of fit) and the cache's state."""
import os

import numba
import pytest

import cartjit.engine.grow  # noqa: F401  (an engine module whose index files are faked)
from cartjit.engine import cache as _cache


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A process that has announced nothing yet, its notices collected in a list."""
    said = []
    monkeypatch.setitem(_cache._state, "told", set())
    monkeypatch.setitem(_cache._state, "say", said.append)
    monkeypatch.setitem(_cache._state, "kind", "the kernels")
    monkeypatch.setitem(_cache._state, "pending", False)
    monkeypatch.setattr(_cache, "cache_dir", lambda: str(tmp_path))
    return said


def _plus_one():
    """A function Numba has not compiled for any type yet (compiled on first call)."""
    return numba.njit(lambda x: x + 1)


def test_each_kind_is_announced_when_it_first_compiles(fresh, tmp_path):
    f = _plus_one()
    _cache.doing("the kernels of kind A")
    f(1)
    assert len(fresh) == 1
    assert "compiling the kernels of kind A" in fresh[0] and str(tmp_path) in fresh[0]
    assert "once" in fresh[0] and "'cartjit compile'" in fresh[0]
    f(1.5)  # another signature of the same kind: already said
    assert len(fresh) == 1
    _cache.doing("the kernels of kind B")
    f(1j)
    assert len(fresh) == 2 and "kind B" in fresh[1]
    _cache.doing("the kernels of kind A")
    f(True)
    assert len(fresh) == 2


def test_nothing_is_said_when_nothing_compiles(fresh):
    f = _plus_one()
    f(1)
    fresh.clear()
    _cache.doing("the kernels of kind C")
    assert f(2) == 3  # compiled already: no compile event
    assert fresh == []


def test_the_compiled_functions_are_counted_callees_included(fresh):
    inner = numba.njit(lambda x: x * 2)
    outer = numba.njit(lambda x: inner(x) + 1)
    before = _cache.compiled_count()
    assert outer(3) == 7
    assert _cache.compiled_count() - before == 2
    assert outer(4) == 9
    assert _cache.compiled_count() - before == 2
    assert len(fresh) == 1  # the outermost compile says it, once


def test_a_compile_before_the_kind_is_known_is_said_under_that_kind(fresh):
    """A fit's data checks may compile before the fit's kind is named: the notice waits
    for the name, then names it."""
    f = _plus_one()
    _cache.doing(None)
    f(1)
    assert fresh == []
    _cache.doing("the kernels of kind P")
    assert len(fresh) == 1 and "kind P" in fresh[0]
    _cache.doing(None)
    f(1.5)
    _cache.doing("the kernels of kind P")  # said already
    assert len(fresh) == 1


def test_a_fit_checks_its_data_under_its_kind(fresh, monkeypatch):
    """The data checks of a fit run before its kind is known (prepare's kernels)."""
    from cartjit import _prepare
    from cartjit.estimators import CARTClassifier

    def checks(est, X, y, sample_weight):
        _plus_one()(1)  # a checking kernel that compiles
        _cache.doing("the kernels of kind Q")

    monkeypatch.setattr(_prepare, "_checked", checks)
    _prepare.prepare(CARTClassifier(), None, None, None)
    assert len(fresh) == 1 and "kind Q" in fresh[0]


def test_quiet_hands_the_first_notice_to_its_caller(fresh):
    f = _plus_one()
    first = []
    _cache.doing("the kernels of kind D")
    with _cache.quiet(first.append):
        f(1)
        f(1.5)
    assert fresh == [] and len(first) == 1 and "compiling the kernels" in first[0]
    with _cache.quiet():
        f(1j)
    assert fresh == []


def test_without_the_cache_the_notice_says_every_process_compiles(fresh, monkeypatch):
    monkeypatch.setattr(_cache.speed, "CACHE", False)
    _cache.doing("the kernels of kind E")
    _plus_one()(1)
    assert "CARTJIT_CACHE=0" in fresh[0] and "every new process" in fresh[0]


def test_the_fits_name_their_kind():
    describe = _cache.describe_fit
    assert describe(True, "gini", False, False, False) == (
        "the kernels of classification trees (gini) on numeric features")
    assert describe(False, "mse", True, True, True) == (
        "the kernels of cross-validated regression trees (mse) on categorical features "
        "with missing values")


def test_an_empty_directory_is_empty(tmp_path):
    assert _cache.cache_state(str(tmp_path)) == "empty"


def test_an_index_newer_than_its_source_is_present(tmp_path):
    (tmp_path / "grow.grow-1.py311.nbi").write_bytes(b"")
    assert _cache.cache_state(str(tmp_path)) == "present"


def test_a_stale_index_counts_as_compiling(tmp_path):
    index = tmp_path / "grow.grow-1.py311.nbi"
    index.write_bytes(b"")
    old = os.path.getmtime(cartjit.engine.grow.__file__) - 100
    os.utime(index, (old, old))
    assert _cache.cache_state(str(tmp_path)) == "stale"


def test_an_index_left_behind_by_an_edit_is_not_stale(tmp_path):
    """After an edit moves a kernel to another line, its old index file stays behind,
    older than the source; the module's newer index of the recompiled kernel counts."""
    src_mtime = os.path.getmtime(cartjit.engine.grow.__file__)
    old = tmp_path / "grow.grow-10.py311.nbi"
    old.write_bytes(b"")
    os.utime(old, (src_mtime - 100, src_mtime - 100))
    new = tmp_path / "grow.grow-12.py311.nbi"
    new.write_bytes(b"")
    os.utime(new, (src_mtime + 100, src_mtime + 100))
    assert _cache.cache_state(str(tmp_path)) == "present"


def _import_engine(cache):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(cartjit.engine.grow.__file__).resolve().parent.parent.parent
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), CARTJIT_CACHE="1")
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, "-c", "import cartjit.engine.speed"], check=True, env=env)


def test_a_changed_engine_drops_every_module_s_cached_kernels(tmp_path):
    """A kernel carries the code of the kernels it calls in other modules, so a change
    to any engine module must drop the cached kernels of all of them, not only its own."""
    stale = tmp_path / "grow._search_subsets-321.py311.nbi"
    data = tmp_path / "grow._search_subsets-321.py311.1.nbc"
    foreign = tmp_path / "othermodule.f-1.py311.nbi"
    for f in (stale, data, foreign):
        f.write_text("x")
    (tmp_path / "cartjit-engine.stamp").write_text("an older engine")
    _import_engine(tmp_path)
    assert not stale.exists() and not data.exists()
    assert foreign.exists()  # another package's kernels are left alone
    stamp = (tmp_path / "cartjit-engine.stamp").read_text()
    assert "subsets.py" in stamp and "grow.py" in stamp
    # the same engine again: the cache is kept
    stale.write_text("x")
    _import_engine(tmp_path)
    assert stale.exists()



def test_a_missing_engine_module_leaves_the_cache_and_raises_nothing(tmp_path, monkeypatch):
    """A partial install (an engine module missing) is not stamped and drops nothing:
    the stamp step returns quietly and the module's own import reports what is missing
    (it raised UnboundLocalError from inside the stamp step before)."""
    from cartjit.engine import speed as _config

    cached = tmp_path / "grow._search-1.py311.nbi"
    cached.write_text("x")
    monkeypatch.setattr(_config, "CACHE", True)
    monkeypatch.setattr(_config, "ENGINE_MODULES", _config.ENGINE_MODULES + ("gone",))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    _config.drop_stale_kernels()
    assert cached.exists()
    assert not (tmp_path / "cartjit-engine.stamp").exists()

def test_a_cache_directory_that_does_not_exist_yet_is_made_and_stamped(tmp_path,
                                                                      monkeypatch):
    """The first process with a new cache directory makes it and stamps it, so that the
    kernels it compiles stay for the next process (unstamped, the next one emptied the
    cache and compiled everything again)."""
    from cartjit.engine import speed as _config

    directory = tmp_path / "new" / "cache"
    monkeypatch.setattr(_config, "CACHE", True)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(directory))
    _config.drop_stale_kernels()
    stamp = directory / "cartjit-engine.stamp"
    assert stamp.read_text() == _config._engine_stamp(
        os.path.dirname(os.path.abspath(_config.__file__)))
    kept = directory / "grow._search-1.py311.nbi"
    kept.write_text("x")
    _config.drop_stale_kernels()  # the next process: same engine, nothing dropped
    assert kept.exists()


def test_the_engine_stamp_covers_every_module_a_kernel_carries():
    """Every module that defines a kernel, and every cartjit module such a module
    imports from (transitively), is stamped: a change to any of them must drop the
    cached kernels. Modules outside that set may change without a recompile."""
    import re
    from pathlib import Path

    from cartjit.engine.speed import ENGINE_MODULES

    package = Path(cartjit.engine.speed.__file__).resolve().parent
    sources = {p.stem: p.read_text(encoding="utf-8") for p in package.glob("*.py")
               if p.stem != "__init__"}

    def imported(source):
        names = set(re.findall(r"^\s*from \.(\w+) import", source, re.M))
        for group in re.findall(r"^\s*from \. import ([\w, ]+)", source, re.M):
            names |= {n.split()[0] for n in group.split(",")}
        return names & set(sources)

    kernels = {m for m, src in sources.items()
               if re.search(r"^@(jit|intrinsic|overload)\b", src, re.M)}
    assert {"grow", "scans", "predict"} <= kernels  # the scan finds them
    needed, todo = set(kernels), list(kernels)
    while todo:
        for m in imported(sources[todo.pop()]) - needed:
            needed.add(m)
            todo.append(m)
    assert needed <= set(ENGINE_MODULES), sorted(needed - set(ENGINE_MODULES))
    assert set(ENGINE_MODULES) <= set(sources)
    assert "cache" not in ENGINE_MODULES and "cv" not in ENGINE_MODULES
