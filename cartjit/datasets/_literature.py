"""The registry of the literature's data: generators and real data sets with their facts.

:func:`literature` returns one :class:`LiteratureEntry` per name. Each entry gives the
task, the size, the citation, the licence, the provenance, and the Bayes error or noise
variance that the paper states. :func:`load_literature` draws or loads a data set by
name and returns the :class:`~cartjit.datasets.Dataset` record of
:func:`~cartjit.datasets.load_dataset`.
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple, Optional

from . import _classics as C
from . import _generators as G

__all__ = ["LiteratureEntry", "literature", "load_literature"]

_CC_BY = "CC BY 4.0 (UCI Machine Learning Repository)"
_GENERATED = "generated (no data are distributed)"
_CART = ("L. Breiman, J. H. Friedman, R. A. Olshen and C. J. Stone (1984), "
         "Classification and Regression Trees, Wadsworth")
_ARCING = ("L. Breiman (1996), Bias, variance, and arcing classifiers, Technical Report "
           "460, Statistics Department, University of California, Berkeley")
_MARS = ("J. H. Friedman (1991), Multivariate adaptive regression splines, The Annals of "
         "Statistics 19(1), 1-67")
_MLBENCH = "exported from R's mlbench 2.1 ({}) by cartjit/datasets/data/export_classics.R"


class LiteratureEntry(NamedTuple):
    """One data set of the literature, as listed by :func:`literature`.

    Attributes
    ----------
    name : str
        The registry name (also the name :func:`load_literature` takes).
    kind : str
        ``"generator"`` (drawn by a ``make_*`` function: give ``n``), ``"bundled"``
        (a CSV shipped with cartjit) or ``"local"`` (read from a file you supply).
    task : str
        ``"classification"`` or ``"regression"``.
    n_features : int
        Number of features (generators: with their default parameters).
    n_classes : int or None
        Number of classes (None for regression).
    n_cases : int or None
        Number of cases of a real data set (None for generators).
    target : str
        Name of the target column of the returned frame.
    bayes_error : float or None
        The Bayes error the source states (a fraction), where one is known.
    bayes_error_exact : float or None
        The Bayes error of the definition as implemented. It is computed exactly, or by
        numerical integration, independently of the generator (docs/datasets.md).
    noise_variance : float or None
        Regression generators: the variance of the added noise at the default
        ``noise`` (the standard deviation).
    citation : str
        The paper that defines or first used the data.
    licence : str
        The licence of the data (generators distribute none).
    provenance : str
        Where the values come from, in one line.
    function : callable
        The generator (``make_*``) or loader (``load_*``).
    """

    name: str
    kind: str
    task: str
    n_features: int
    n_classes: Optional[int]
    n_cases: Optional[int]
    target: str
    bayes_error: Optional[float]
    bayes_error_exact: Optional[float]
    noise_variance: Optional[float]
    citation: str
    licence: str
    provenance: str
    function: Callable


def _gen(name, function, task, p, k, target, bayes, exact, noise_var, citation,
         provenance):
    return LiteratureEntry(name, "generator", task, p, k, None, target, bayes, exact,
                           noise_var, citation, _GENERATED, provenance, function)


def _real(name, kind, function, p, k, n, target, citation, licence, provenance):
    return LiteratureEntry(name, kind, "classification", p, k, n, target, None, None,
                           None, citation, licence, provenance, function)


_ENTRIES = (
    _gen("waveform", G.make_waveform, "classification", 21, 3, "class", 0.14, 0.1329,
         None, _CART + ", §2.6.2",
         "the book's definition; the book states the Bayes error as about 0.14"),
    _gen("led", G.make_led, "classification", 7, 10, "class", 0.26, 0.2600, None,
         _CART + ", §2.6.1", "the book's definition, segments flipped with probability 0.1"),
    _gen("led24", G.make_led24, "classification", 24, 10, "class", 0.26, 0.2600, None,
         _CART + ", §2.6.1", "the book's definition with its 17 fair-coin noise variables"),
    _gen("twonorm", G.make_twonorm, "classification", 20, 2, "class", 0.023, 0.02275,
         None, _ARCING, "Breiman's definition, a = 2/sqrt(20)"),
    _gen("threenorm", G.make_threenorm, "classification", 20, 2, "class", 0.105, 0.1046,
         None, _ARCING, "Breiman's definition, a = 2/sqrt(20)"),
    _gen("ringnorm", G.make_ringnorm, "classification", 20, 2, "class", 0.013, 0.0124,
         None, _ARCING,
         "Breiman's definition with a = 2/sqrt(20) as in DELVE (mlbench: 1/sqrt(20), "
         "Bayes error 0.0150)"),
    _gen("friedman1", G.make_friedman1, "regression", 10, None, "y", None, None, 1.0,
         _MARS, "Friedman's function #1, 10 uniform inputs of which 5 are irrelevant, "
         "noise sd 1"),
    _gen("friedman2", G.make_friedman2, "regression", 4, None, "y", None, None, 125.0 ** 2,
         _MARS, "Friedman's function #2, noise sd 125 (signal-to-noise 3:1)"),
    _gen("friedman3", G.make_friedman3, "regression", 4, None, "y", None, None, 0.1 ** 2,
         _MARS, "Friedman's function #3, noise sd 0.1 (signal-to-noise 3:1)"),
    _real("breast_cancer", "bundled", C.load_breast_cancer, 9, 2, 699, "Class",
          "W. H. Wolberg and O. L. Mangasarian (1990), PNAS 87, 9193-9196", _CC_BY,
          _MLBENCH.format("BreastCancer") + "; UCI Breast Cancer Wisconsin (Original)"),
    _real("ionosphere", "bundled", C.load_ionosphere, 34, 2, 351, "Class",
          "V. G. Sigillito et al. (1989), Johns Hopkins APL Technical Digest 10, 262-266",
          _CC_BY, _MLBENCH.format("Ionosphere") + "; UCI Ionosphere"),
    _real("glass", "bundled", C.load_glass, 9, 6, 214, "Type",
          "I. W. Evett and E. J. Spiehler (1987), Rule induction in forensic science",
          _CC_BY, _MLBENCH.format("Glass") + "; UCI Glass Identification"),
    _real("sonar", "bundled", C.load_sonar, 60, 2, 208, "Class",
          "R. P. Gorman and T. J. Sejnowski (1988), Neural Networks 1, 75-89", _CC_BY,
          _MLBENCH.format("Sonar") + "; UCI Connectionist Bench (Sonar, Mines vs. Rocks)"),
    _real("soybean", "bundled", C.load_soybean, 35, 19, 683, "Class",
          "R. S. Michalski and R. L. Chilausky (1980), International Journal of Policy "
          "Analysis and Information Systems 4(2), 125-161", _CC_BY,
          _MLBENCH.format("Soybean") + "; UCI Soybean (Large)"),
    _real("vehicle", "bundled", C.load_vehicle, 18, 4, 846, "Class",
          "J. P. Siebert (1987), Turing Institute Research Memorandum TIRM-87-018",
          _CC_BY, _MLBENCH.format("Vehicle") + "; UCI Statlog (Vehicle Silhouettes)"),
    _real("vowel", "bundled", C.load_vowel, 10, 11, 990, "Class",
          "D. H. Deterding (1989), PhD thesis, University of Cambridge", _CC_BY,
          _MLBENCH.format("Vowel") + "; UCI Connectionist Bench (Vowel Recognition)"),
    _real("votes", "bundled", C.load_votes, 16, 2, 435, "Class",
          "J. C. Schlimmer (1987), PhD thesis, University of California, Irvine", _CC_BY,
          _MLBENCH.format("HouseVotes84") + "; UCI Congressional Voting Records"),
    _real("pima_diabetes", "local", C.load_pima_diabetes, 8, 2, 768, "diabetes",
          "J. W. Smith et al. (1988), Proceedings of the Symposium on Computer "
          "Applications and Medical Care, 261-265",
          "none stated (withdrawn by UCI over its licence): not bundled",
          "mlbench's PimaIndiansDiabetes2 (zeros as missing) from a local file or R"),
    _real("pima_diabetes_raw", "local",
          functools.partial(C.load_pima_diabetes, zeros_as_missing=False),
          8, 2, 768, "diabetes",
          "J. W. Smith et al. (1988), Proceedings of the Symposium on Computer "
          "Applications and Medical Care, 261-265",
          "none stated (withdrawn by UCI over its licence): not bundled",
          "mlbench's PimaIndiansDiabetes (UCI's zeros kept, as in Breiman 1996) from a "
          "local file or R"),
    _real("heart", "local", C.load_heart, 13, 2, 303, "disease",
          "R. Detrano et al. (1989), American Journal of Cardiology 64, 304-310", _CC_BY,
          "UCI's processed.cleveland.data from a local file (not in mlbench or MASS)"),
)


def literature():
    """The literature's data sets, by name.

    Returns
    -------
    dict of str to LiteratureEntry
        A fresh dict in a fixed order: the generators first, then the bundled real data,
        then the local ones. Changing it changes nothing in the registry.

    Examples
    --------
    >>> entry = literature()["twonorm"]
    >>> entry.kind, entry.task, entry.n_features, entry.bayes_error
    ('generator', 'classification', 20, 0.023)
    """
    return {entry.name: entry for entry in _ENTRIES}


def load_literature(name, *, n=None, random_state=None, **options):
    """Draw or load a data set of :func:`literature` as a ``Dataset`` record.

    Parameters
    ----------
    name : str
        A name of :func:`literature`.
    n : int, optional
        Number of cases. Generators need it; real data sets refuse it.
    random_state : None, int or numpy.random.Generator
        The generators' seed. Real data sets refuse any value other than None.
    **options
        Passed on to the generator or loader (for example ``noise=``, or ``path=`` for
        the local files).

    Returns
    -------
    Dataset
        ``Dataset(name, frame, target, features, task, description)`` as from
        :func:`cartjit.datasets.load_dataset`, with the entry's provenance as its
        description.
    """
    from . import Dataset  # the record of the bundled registry; imported late (no cycle)

    entries = literature()
    if not isinstance(name, str) or name not in entries:
        raise ValueError(f"name must be one of {', '.join(map(repr, entries))}, "
                         f"got {name!r}")
    entry = entries[name]
    if entry.kind == "generator":
        if n is None:
            raise ValueError(f"{name} is a generator: give the number of cases n")
        frame = entry.function(n, random_state=random_state, **options)
    else:
        if n is not None or random_state is not None:
            raise ValueError(f"{name} is a real data set of {entry.n_cases} cases: n and "
                             f"random_state do not apply, got n={n!r}, "
                             f"random_state={random_state!r}")
        frame = entry.function(**options)
    features = tuple(c for c in frame.columns if c != entry.target)
    description = f"{entry.provenance}. {entry.citation}. Licence: {entry.licence}."
    return Dataset(name, frame, entry.target, features, entry.task, description)
