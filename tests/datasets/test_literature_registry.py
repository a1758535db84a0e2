"""The registry of the literature's data: literature() and load_literature()."""
from __future__ import annotations

import numpy as np
import pytest

import cartjit.datasets as ds
from cartjit.datasets import Dataset, LiteratureEntry, literature, load_literature

GENERATORS = ["waveform", "led", "led24", "twonorm", "threenorm", "ringnorm", "friedman1",
              "friedman2", "friedman3"]
BUNDLED = ["breast_cancer", "ionosphere", "glass", "sonar", "soybean", "vehicle", "vowel",
           "votes"]
LOCAL = ["pima_diabetes", "pima_diabetes_raw", "heart"]


def test_names_kinds_and_order():
    entries = literature()
    assert list(entries) == GENERATORS + BUNDLED + LOCAL
    for name, entry in entries.items():
        assert isinstance(entry, LiteratureEntry) and entry.name == name
        assert entry.kind == ("generator" if name in GENERATORS else
                              "bundled" if name in BUNDLED else "local")
        assert entry.task in ("classification", "regression")
        assert (entry.n_classes is None) == (entry.task == "regression")
        assert (entry.n_cases is None) == (entry.kind == "generator")
        assert entry.citation and entry.licence and entry.provenance
        assert callable(entry.function)
    # the breiman (1996) bagging study's data sets are all there
    for name in ("waveform", "breast_cancer", "ionosphere", "pima_diabetes_raw", "glass",
                 "soybean"):
        assert name in entries
    # a fresh dict: changing it changes nothing
    entries.pop("waveform")
    assert "waveform" in literature()


def test_generator_entries_match_their_functions():
    entries = literature()
    for name in GENERATORS:
        entry = entries[name]
        assert entry.function is getattr(ds, f"make_{name}")
        got = load_literature(name, n=40, random_state=1)
        assert isinstance(got, Dataset)
        assert got.frame.shape == (40, entry.n_features + 1)
        assert got.target == entry.target and got.task == entry.task
        assert got.features == tuple(f"x{j}" for j in range(1, entry.n_features + 1))
        assert entry.citation in got.description
        again = load_literature(name, n=40, random_state=1)
        np.testing.assert_array_equal(got.frame.to_numpy(), again.frame.to_numpy())
        if entry.task == "classification":
            assert got.frame[entry.target].nunique() <= entry.n_classes
            assert entry.bayes_error is not None and entry.noise_variance is None
        else:
            assert entry.bayes_error is None and entry.noise_variance > 0
    noisy = load_literature("friedman2", n=5, random_state=0, noise=0.0).frame
    from cartjit.datasets._generators import friedman2_function
    np.testing.assert_allclose(noisy["y"], friedman2_function(noisy[["x1", "x2", "x3",
                                                                       "x4"]].to_numpy()))


def test_bundled_entries_match_their_loaders():
    entries = literature()
    for name in BUNDLED:
        entry = entries[name]
        assert entry.function is getattr(ds, f"load_{name}")
        got = load_literature(name)
        assert got.frame.shape == (entry.n_cases, entry.n_features + 1)
        assert got.frame[entry.target].nunique() == entry.n_classes
        assert got.features == tuple(got.frame.columns[:-1])


def test_load_literature_errors():
    with pytest.raises(ValueError, match=r"^name must be one of 'waveform', 'led', .*"
                                         r"got 'iris'"):
        load_literature("iris")
    with pytest.raises(ValueError, match=r"^name must be one of .* got 3"):
        load_literature(3)
    with pytest.raises(ValueError, match=r"^waveform is a generator: give the number of "
                                         r"cases n"):
        load_literature("waveform")
    with pytest.raises(ValueError, match=r"^sonar is a real data set of 208 cases: n and "
                                         r"random_state do not apply, got n=100"):
        load_literature("sonar", n=100)
    with pytest.raises(ValueError, match=r"^n must be an integer >= 1, got 0"):
        load_literature("twonorm", n=0)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'noise'"):
        load_literature("glass", noise=1.0)


def test_bundled_registry_of_load_dataset_is_unchanged():
    # the literature has its own registry; list_datasets keeps the worked examples
    assert not set(ds.list_datasets()) & set(literature())
