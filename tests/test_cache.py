"""The once-per-process notice that the kernels are about to compile."""
import os

import numba

import cartjit._builder  # noqa: F401  (an engine module whose index files are faked)
from cartjit import _cache


def _fresh(monkeypatch, directory):
    monkeypatch.setattr(_cache, "_TOLD", _cache.threading.Event())
    monkeypatch.setattr(_cache, "cache_dir", lambda: str(directory))


def test_says_once_when_the_cache_is_empty(tmp_path, monkeypatch):
    _fresh(monkeypatch, tmp_path)
    said = []
    assert _cache.notice_once(said.append) is True
    assert _cache.notice_once(said.append) is False
    assert len(said) == 1
    assert "compiling the kernels" in said[0] and str(tmp_path) in said[0]


def test_says_nothing_when_the_kernels_are_cached(tmp_path, monkeypatch):
    _fresh(monkeypatch, tmp_path)
    (tmp_path / "_builder.grow-1.py311.nbi").write_bytes(b"")
    said = []
    assert _cache.notice_once(said.append) is False
    assert said == []


def test_a_stale_index_counts_as_compiling(tmp_path, monkeypatch):
    _fresh(monkeypatch, tmp_path)
    index = tmp_path / "_builder.grow-1.py311.nbi"
    index.write_bytes(b"")
    old = os.path.getmtime(cartjit._builder.__file__) - 100
    os.utime(index, (old, old))
    assert _cache.cache_state(str(tmp_path)) == "stale"
    said = []
    assert _cache.notice_once(said.append) is True


def test_marked_as_told_says_nothing(tmp_path, monkeypatch):
    _fresh(monkeypatch, tmp_path)
    _cache.mark_told()
    said = []
    assert _cache.notice_once(said.append) is False and said == []


def test_an_index_left_behind_by_an_edit_is_not_stale(tmp_path, monkeypatch):
    """After an edit moves a kernel to another line, its old index file stays behind,
    older than the source; the module's newer index of the recompiled kernel counts."""
    _fresh(monkeypatch, tmp_path)
    src_mtime = os.path.getmtime(cartjit._builder.__file__)
    old = tmp_path / "_builder.grow-10.py311.nbi"
    old.write_bytes(b"")
    os.utime(old, (src_mtime - 100, src_mtime - 100))
    new = tmp_path / "_builder.grow-12.py311.nbi"
    new.write_bytes(b"")
    os.utime(new, (src_mtime + 100, src_mtime + 100))
    assert _cache.cache_state(str(tmp_path)) == "present"
    said = []
    assert _cache.notice_once(said.append) is False and said == []


def _import_engine(cache):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(cartjit._builder.__file__).resolve().parent.parent
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), CARTJIT_CACHE="1")
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, "-c", "import cartjit._config"], check=True, env=env)


def test_a_changed_engine_drops_every_module_s_cached_kernels(tmp_path):
    """A kernel carries the code of the kernels it calls in other modules, so a change
    to any engine module must drop the cached kernels of all of them, not only its own."""
    stale = tmp_path / "_builder._search_subsets-321.py311.nbi"
    data = tmp_path / "_builder._search_subsets-321.py311.1.nbc"
    foreign = tmp_path / "othermodule.f-1.py311.nbi"
    for f in (stale, data, foreign):
        f.write_text("x")
    (tmp_path / "cartjit-engine.stamp").write_text("an older engine")
    _import_engine(tmp_path)
    assert not stale.exists() and not data.exists()
    assert foreign.exists()  # another package's kernels are left alone
    stamp = (tmp_path / "cartjit-engine.stamp").read_text()
    assert "_subsets.py" in stamp and "_builder.py" in stamp
    # the same engine again: the cache is kept
    stale.write_text("x")
    _import_engine(tmp_path)
    assert stale.exists()



def test_a_missing_engine_module_leaves_the_cache_and_raises_nothing(tmp_path, monkeypatch):
    """A partial install (an engine module missing) is not stamped and drops nothing:
    the stamp step returns quietly and the module's own import reports what is missing
    (it raised UnboundLocalError from inside the stamp step before)."""
    from cartjit import _config

    cached = tmp_path / "_builder._search-1.py311.nbi"
    cached.write_text("x")
    monkeypatch.setattr(_config, "CACHE", True)
    monkeypatch.setattr(_config, "ENGINE_MODULES", _config.ENGINE_MODULES + ("_gone",))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    _config.drop_stale_kernels()
    assert cached.exists()
    assert not (tmp_path / "cartjit-engine.stamp").exists()

def test_a_cache_directory_that_does_not_exist_yet_is_made_and_stamped(tmp_path,
                                                                      monkeypatch):
    """The first process with a new cache directory makes it and stamps it, so that the
    kernels it compiles stay for the next process (unstamped, the next one emptied the
    cache and compiled everything again)."""
    from cartjit import _config

    directory = tmp_path / "new" / "cache"
    monkeypatch.setattr(_config, "CACHE", True)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(directory))
    _config.drop_stale_kernels()
    stamp = directory / "cartjit-engine.stamp"
    assert stamp.read_text() == _config._engine_stamp(
        os.path.dirname(os.path.abspath(_config.__file__)))
    kept = directory / "_builder._search-1.py311.nbi"
    kept.write_text("x")
    _config.drop_stale_kernels()  # the next process: same engine, nothing dropped
    assert kept.exists()


def test_the_engine_stamp_covers_every_module_a_kernel_carries():
    """Every module that defines a kernel, and every cartjit module such a module
    imports from (transitively), is stamped: a change to any of them must drop the
    cached kernels. Modules outside that set may change without a recompile."""
    import re
    from pathlib import Path

    from cartjit._config import ENGINE_MODULES

    package = Path(cartjit._config.__file__).resolve().parent
    sources = {p.stem: p.read_text(encoding="utf-8") for p in package.glob("_*.py")
               if p.stem not in ("__init__", "__main__")}

    def imported(source):
        names = set(re.findall(r"^\s*from \.(_\w+) import", source, re.M))
        for group in re.findall(r"^\s*from \. import ([\w, ]+)", source, re.M):
            names |= {n.strip() for n in group.split(",")}
        return names & set(sources)

    kernels = {m for m, src in sources.items()
               if re.search(r"^@(jit|intrinsic|overload)\b", src, re.M)}
    assert {"_builder", "_splitter", "_predict"} <= kernels  # the scan finds them
    needed, todo = set(kernels), list(kernels)
    while todo:
        for m in imported(sources[todo.pop()]) - needed:
            needed.add(m)
            todo.append(m)
    assert needed <= set(ENGINE_MODULES), sorted(needed - set(ENGINE_MODULES))
    assert set(ENGINE_MODULES) <= set(sources)
    assert "_modelfile" not in ENGINE_MODULES and "_encoding" not in ENGINE_MODULES
