"""The tree and forest options of ``cartjit show`` and ``cartjit fit``: one table, from
which the options, their help, their parsing and the synopsis in docs/experiments.md are
made.

Each :class:`Option` maps command-line spellings to one parameter of the estimators
(:class:`~cartjit.CARTClassifier`, :class:`~cartjit.CARTRegressor`, their ``…CV``
versions, and the forests of :mod:`cartjit.ensemble`, chosen by ``--forest`` or
``--bagging``): the first spelling is the parameter's name with dashes for underscores, the
others are aliases (rpart's name for it where docs/rpart.md gives one, or an older
spelling). The command line converts what is given with the option's parser and hands it
to the estimator; an option not given leaves the estimator's default. A bad value is an
error naming the spelling used (``--alpha: must be a number >= 0, got '-1'``).

``python -m cartjit._cli_options`` rewrites the generated section of docs/experiments.md
(between :data:`DOC_BEGIN` and :data:`DOC_END`); ``tests/cli/test_cli_options.py`` checks
that the section, the parsers and the estimators' parameters agree with the table.
"""
from __future__ import annotations

import argparse
import math
import os
import re
from dataclasses import dataclass

__all__ = ["Option", "OPTIONS", "NOT_OPTIONS", "OptionError", "add_options", "given",
           "estimator_params", "option_for_message", "markdown", "DOC_BEGIN", "DOC_END",
           "TREE", "CV", "FOREST", "KINDS"]

CLASSIFICATION, REGRESSION = "classification", "regression"
BOTH = frozenset((CLASSIFICATION, REGRESSION))
#: The kinds of estimator: a single tree (CARTClassifier/CARTRegressor), one chosen by
#: cross-validation (``--cv``: the ``…CV`` estimators), a forest (``--forest``: the random
#: forests, ``--bagging``: the bagged trees).
TREE, CV, FOREST = "tree", "cv", "forest"
KINDS = frozenset((TREE, CV, FOREST))


class OptionError(ValueError):
    """A value of an option that cannot be used; the message starts with the option."""


# ---------------------------------------------------------------- value parsers
# Each takes the text given and returns the value for the estimator, or raises
# ValueError with what is allowed (the option's spelling is added in front).

def _int(low, high=None):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            allowed = f"an integer >= {low}" if high is None else \
                f"an integer from {low} to {high}"
            raise ValueError(f"must be {allowed}, got {text!r}")
        return value
    parse.allowed = f"integer >= {low}" if high is None else f"integer {low}..{high}"
    return parse


def _finite_nonnegative(text):
    """``text`` as a finite number >= 0, or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0 and math.isfinite(value) else None


def _number(text):
    value = _finite_nonnegative(text)
    if value is None:
        raise ValueError(f"must be a number >= 0, got {text!r}")
    return value


_number.allowed = "number >= 0"


def _choice(*choices, as_int=False):
    def parse(text):
        if text not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, got {text!r}")
        return int(text) if as_int else text
    parse.allowed = "|".join(choices)
    return parse


def _numbers(text, what):
    """Comma-separated numbers >= 0."""
    values = []
    for item in text.split(","):
        try:
            value = float(item)
        except ValueError:
            raise ValueError(f"{what}: {item.strip()!r} is not a number") from None
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError(f"{what}: every entry must be a finite number >= 0, got "
                             f"{item.strip()!r}")
        values.append(value)
    return values


def _priors(text):
    if text in ("empirical", "equal"):
        return text
    import numpy as np
    return np.asarray(_numbers(text, "must be 'empirical', 'equal' or one number per "
                                      "class, e.g. 0.2,0.3,0.5"), dtype=np.float64)


_priors.allowed = "empirical|equal|P1,P2,..."


def _cost(text):
    """The matrix as text, or the path of a CSV file holding it (one row per line,
    entries separated by ',', no header): a text ending in ``.csv`` or naming a file is
    a path."""
    import numpy as np
    if text.lower().endswith(".csv") or os.path.isfile(text):
        return _cost_file(text)
    rows = [_numbers(row, "must be rows of numbers separated by ';', e.g. '0,1;2,0'")
            for row in text.split(";")]
    if len({len(row) for row in rows}) != 1 or len(rows) != len(rows[0]):
        raise ValueError(f"must be a square matrix, rows separated by ';' and entries by "
                         f"',' (e.g. '0,1;2,0' for two classes), got {text!r} "
                         f"({len(rows)} rows of {'/'.join(str(len(r)) for r in rows)} "
                         "entries)")
    return np.asarray(rows, dtype=np.float64)


def _cost_file(path):
    """The cost matrix of the CSV file ``path``; errors name the file (and the line)."""
    import csv

    import numpy as np
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            lines = [(n, row) for n, row in enumerate(csv.reader(fh), 1)
                     if any(cell.strip() for cell in row)]
    except OSError as exc:
        raise ValueError(f"cannot read the cost matrix file {path!r}: "
                         f"{exc.strerror or exc}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path!r} is not a CSV file of numbers ({exc})") from None
    if not lines:
        raise ValueError(f"the cost matrix file {path!r} is empty")
    rows = [_numbers(",".join(row), f"{path!r}, line {n}: must hold numbers separated "
                                    "by ','") for n, row in lines]
    if len({len(row) for row in rows}) != 1 or len(rows) != len(rows[0]):
        raise ValueError(f"the cost matrix of {path!r} must be square, one row per line, "
                         f"but it has {len(rows)} rows of "
                         f"{'/'.join(str(len(r)) for r in rows)} entries")
    return np.asarray(rows, dtype=np.float64)


_cost.allowed = "'C11,C12;C21,C22'|FILE.csv"


def _class_weight(text):
    if text == "balanced":
        return text
    weights = {}
    for item in text.split(","):
        label, sep, weight = item.rpartition(":")
        if not sep or not label:
            raise ValueError(f"must be 'balanced' or LABEL:WEIGHT pairs separated by ',' "
                             f"(e.g. yes:2,no:1), got {text!r}")
        value = _finite_nonnegative(weight)
        if value is None:
            raise ValueError(f"the weight of {label!r} must be a finite number >= 0, got "
                             f"{weight!r}")
        weights[label] = value
    return weights


_class_weight.allowed = "balanced|LABEL:W,..."


def _categorical(text):
    if text == "from_dtype":
        return text
    if text == "none":
        return None
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise ValueError(f"must be 'from_dtype', 'none' or column names separated by ',', "
                         f"got {text!r}")
    return names


_categorical.allowed = "from_dtype|none|COL,..."


def _max_surrogate(text):
    return text if text == "auto" else _int(0)(text)


_max_surrogate.allowed = "auto|integer >= 0"


def _cv(text):
    if text == "loo":
        return text
    return _int(2)(text)


_cv.allowed = "integer >= 2|loo"


def _selection(text):
    if text in ("min", "1se"):
        return text
    value = _finite_nonnegative(text)
    if value is None:
        raise ValueError(f"must be 'min', '1se' or a number m >= 0 (the m-SE rule), got "
                         f"{text!r}")
    return value


_selection.allowed = "min|1se|m"


def _bool(text):
    if text not in ("true", "false"):
        raise ValueError(f"must be true or false, got {text!r}")
    return text == "true"


_bool.allowed = "true|false"


def _int_or_fraction(text, what):
    """An int >= 1 (no decimal point) or a fraction in (0, 1] (with one)."""
    try:
        value = float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        value = None
    if value is None or (isinstance(value, int) and value < 1) or \
            (isinstance(value, float) and not 0.0 < value <= 1.0):
        raise ValueError(f"must be {what}: an integer >= 1 or a fraction in (0, 1] "
                         f"written with a decimal point, got {text!r}")
    return value


def _max_features(text):
    if text in ("sqrt", "log2"):
        return text
    if text == "all":
        return None
    return _int_or_fraction(text, "'sqrt', 'log2', 'all' or a number of features")


_max_features.allowed = "sqrt|log2|all|integer >= 1|fraction in (0, 1]"


def _max_samples(text):
    return _int_or_fraction(text, "a number of cases")


_max_samples.allowed = "integer >= 1|fraction in (0, 1]"


def _n_jobs(text):
    if text == "-1":
        return -1
    try:
        return _int(1)(text)
    except ValueError:
        raise ValueError(f"must be -1 (every CPU) or an integer >= 1, got {text!r}") \
            from None


_n_jobs.allowed = "integer >= 1|-1"


@dataclass(frozen=True)
class Option:
    """One option: ``param`` of the estimators, given as ``flags``.

    ``tasks``: the kinds of tree whose estimators take it; ``kinds``: the kinds of
    estimator (:data:`TREE`, :data:`CV`, :data:`FOREST`) that take it; ``parse``: text ->
    value (None for a flag without a value, which gives True); ``default``: the
    estimators' default, said in the help (the test checks it against their
    signatures), or ``{kind: default}`` where the kinds differ.
    """
    param: str
    flags: tuple
    help: str
    parse: object = None
    tasks: frozenset = BOTH
    kinds: frozenset = KINDS
    metavar: str | None = None
    default: object = None

    def default_for(self, kind):
        """The default of the estimators of ``kind``."""
        return self.default.get(kind) if isinstance(self.default, dict) else self.default

    @property
    def name(self):
        """The main spelling, ``--`` and the parameter with dashes."""
        return self.flags[0]


def _opt(param, help, parse=None, aliases=(), **kw):
    return Option(param, ("--" + param.replace("_", "-"),) + tuple(aliases), help, parse,
                  **kw)


#: The table. Help texts say what the option does; the default is the estimator's.
OPTIONS = (
    _opt("criterion", "impurity of the split search: gini, entropy or twoing "
         "(classification), squared_error (regression)",
         _choice("gini", "entropy", "twoing", "squared_error")),
    _opt("priors", "class priors: 'empirical' (the class proportions), 'equal', or one "
         "number per class in the order of the sorted labels, summing to 1",
         _priors, tasks=frozenset((CLASSIFICATION,)), metavar="P", default="empirical"),
    _opt("class_weight", "priors the scikit-learn way: 'balanced' or LABEL:WEIGHT pairs "
         "(a class not named has weight 1); not with --priors",
         _class_weight, tasks=frozenset((CLASSIFICATION,)), metavar="W"),
    _opt("cost", "misclassification costs: rows (true class) separated by ';', entries "
         "(predicted class) by ',', or a CSV file of the matrix (one row per line, no "
         "header); classes in the order of the sorted labels, zero diagonal", _cost,
         tasks=frozenset((CLASSIFICATION,)), metavar="C"),
    _opt("max_depth", "nodes at this depth are leaves (the root has depth 0)", _int(0),
         aliases=("--maxdepth",), metavar="D"),
    _opt("min_samples_split", "a node with fewer cases is a leaf", _int(2),
         aliases=("--minsplit",), metavar="N", default=2),
    _opt("min_samples_leaf", "every split leaves at least this many cases on each side",
         _int(1), aliases=("--minbucket",), metavar="N", default=1),
    _opt("min_impurity_decrease", "a node splits only if p(t) times the impurity "
         "decrease is at least this", _number, metavar="X", default=0.0),
    _opt("max_leaf_nodes", "grow best-first until this many leaves", _int(2), metavar="N"),
    _opt("ccp_alpha", "keep the pruned subtree T(A) instead of T_max (a forest: of each "
         "tree)", _number, aliases=("--alpha",),
         kinds=frozenset((TREE, FOREST)), metavar="A"),
    _opt("cp", "rpart's relative complexity: keep T(A) with A = CP x R(root) (with --cv: "
         "the sequence ends there; a forest prunes each tree at CP x its own R(root))",
         _number, metavar="CP"),
    _opt("categorical_features", "which features are categorical: 'from_dtype' (text "
         "and boolean columns), 'none', or column names separated by ','",
         _categorical, metavar="COLS", default="from_dtype"),
    _opt("max_categories_exhaustive", "with more than two classes, search all subsets of "
         "a categorical feature with at most this many levels at a node", _int(1, 20),
         tasks=frozenset((CLASSIFICATION,)), metavar="L", default=12),
    _opt("max_surrogate", "surrogate splits kept per split ('auto': 5 when the data "
         "have a missing value, else 0)", _max_surrogate,
         aliases=("--maxsurrogate",), metavar="N", default="auto"),
    _opt("use_surrogate", "a case missing the split feature: 0 stops, 1 follows the "
         "surrogates, 2 then goes to the larger child", _choice("0", "1", "2", as_int=True),
         aliases=("--usesurrogate",), metavar="{0,1,2}", default=2),
    _opt("surrogate_style", "a surrogate's agreement counts the cases with the split "
         "feature (0) or with both features (1)", _choice("0", "1", as_int=True),
         aliases=("--surrogatestyle",), metavar="{0,1}", default=0),
    _opt("max_competitor", "competitor splits recorded per split (shown by --summary)",
         _int(0), aliases=("--maxcompete",), metavar="N",
         default={TREE: 4, CV: 4, FOREST: 0}),
    _opt("compat", "pruning rules: breiman (the exact sequence) or rpart (rpart's)",
         _choice("breiman", "rpart"), kinds=frozenset((TREE, CV)), default="breiman"),
    _opt("cv", "choose the subtree by V-fold cross-validation (an integer, or 'loo' for "
         "leave-one-out)", _cv, aliases=("--xval",), kinds=frozenset((CV,)), metavar="V",
         default=10),
    _opt("stratify", "stratified folds", None,
         tasks=frozenset((CLASSIFICATION,)), kinds=frozenset((CV,)), default=False),
    _opt("n_repeats", "average the CV risk over this many fold draws", _int(1),
         kinds=frozenset((CV,)), metavar="R", default=1),
    _opt("selection", "the subtree rule: 'min', '1se' or a number m (the "
         "m-SE rule)", _selection, kinds=frozenset((CV,)), metavar="RULE", default="1se"),
    _opt("random_state", "the seed of the folds, or of the forest (each tree's sample "
         "and feature draws)", _int(0), aliases=("--seed",), kinds=frozenset((CV, FOREST)),
         metavar="SEED", default=0),
    # the forests' own parameters (docs/forests.md)
    _opt("n_estimators", "the number of trees B", _int(1), aliases=("--ntree",),
         kinds=frozenset((FOREST,)), metavar="B", default=100),
    _opt("max_features", "features drawn at random at each node (Breiman's m): 'sqrt', "
         "'log2', 'all' (bagging), a number, or a fraction of the features",
         _max_features, aliases=("--mtry",), kinds=frozenset((FOREST,)), metavar="M"),
    _opt("bootstrap", "grow each tree on a sample of the cases (false: every tree on "
         "every case)", _bool, kinds=frozenset((FOREST,)), metavar="{true,false}",
         default=True),
    _opt("replace", "draw each tree's sample with replacement (false: a subsample)",
         _bool, kinds=frozenset((FOREST,)), metavar="{true,false}", default=True),
    _opt("max_samples", "the size of each tree's sample: a number of cases or a fraction "
         "of them; none: all the cases with replacement, 0.632 of them without", _max_samples,
         aliases=("--sampsize",), kinds=frozenset((FOREST,)), metavar="S"),
    _opt("oob_score", "compute the out-of-bag error and score", None,
         kinds=frozenset((FOREST,)), default=False),
    _opt("oob_importance", "compute Breiman's out-of-bag permutation importance", None,
         kinds=frozenset((FOREST,)), default=False),
    _opt("voting", "how the trees are combined: proba (average their class "
         "probabilities) or vote (one vote per tree)", _choice("proba", "vote"),
         tasks=frozenset((CLASSIFICATION,)), kinds=frozenset((FOREST,)), default="proba"),
    _opt("prune", "cv: prune each tree by the cross-validation of its own sample",
         _choice("cv"), kinds=frozenset((FOREST,)), metavar="cv"),
    _opt("prune_folds", "the folds of each tree's cross-validation", _int(2),
         kinds=frozenset((FOREST,)), metavar="V", default=10),
    _opt("prune_selection", "the subtree rule of each tree's cross-validation: 'min', "
         "'1se' or a number m", _selection, kinds=frozenset((FOREST,)), metavar="RULE",
         default="1se"),
    _opt("n_jobs", "threads growing the trees, none meaning one (the forest is the same "
         "for any number)",
         _n_jobs, kinds=frozenset((FOREST,)), metavar="N"),
)

#: Parameters of the estimators the command line does not offer, and why.
NOT_OPTIONS = {
    "cv_predictions": "the commands print no per-case cross-validated predictions",
}

_BY_PARAM = {o.param: o for o in OPTIONS}


class _Store(argparse.Action):
    """Keep the text given and the spelling used (``namespace.option_flags``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True if self.nargs == 0 else values)
        flags = dict(getattr(namespace, "option_flags", None) or {})
        flags[self.dest] = option_string
        namespace.option_flags = flags


def add_options(parser):
    """Add every option of the table to ``parser`` (an argparse parser or group)."""
    for o in OPTIONS:
        text = o.help + ("" if o.parse is None else f" (default {_default_text(o)})")
        if o.tasks != BOTH:
            text += f"; {'/'.join(sorted(o.tasks))} only"
        needs = _needs(o)
        if needs:
            text += f"; {needs}"
        kw = {"nargs": 0} if o.parse is None else {"metavar": o.metavar}
        parser.add_argument(*o.flags, dest=o.param, action=_Store, default=None,
                            help=text, **kw)


def _needs(o):
    """What the help says of the kinds of estimator that take ``o`` (empty: all)."""
    if o.kinds == KINDS or o.param == "cv":
        return ""
    if o.kinds == frozenset((FOREST,)):
        return "needs --forest or --bagging"
    if o.kinds == frozenset((CV,)):
        return "needs --cv"
    if o.kinds == frozenset((CV, FOREST)):
        return "needs --cv, --forest or --bagging"
    return "not with " + ", ".join({CV: "--cv", FOREST: "--forest or --bagging"}[k]
                                   for k in sorted(KINDS - o.kinds))


def _default_text(o):
    if o.param == "criterion":
        return "gini for classification, squared_error for regression"
    if o.param == "cv":
        return "none: no cross-validation"
    if o.param == "max_features":
        return "sqrt for classification, 1/3 for regression; all with --bagging"
    if isinstance(o.default, dict):  # a tree's default, then the forests'
        return f"{o.default[TREE]}, {o.default[FOREST]} for forests"
    return "none" if o.default is None else str(o.default).lower() \
        if isinstance(o.default, bool) else str(o.default)


def given(args):
    """``{param: flag used}`` of the table's options given on the command line."""
    return dict(getattr(args, "option_flags", None) or {})


def estimator_params(args, task, kind):
    """The estimator parameters of the options given in ``args`` for a ``task`` tree of
    ``kind`` (:data:`TREE`, :data:`CV`: a ``…CV`` estimator, :data:`FOREST`);
    :class:`OptionError` for a value that cannot be used or an option that does not
    apply, naming the option as given."""
    params = {}
    used = given(args)
    if "ccp_alpha" in used and "cv" in used:
        raise OptionError(f"{used['ccp_alpha']} and {used['cv']} both choose the subtree: "
                          "give one of them")
    for param, flag in used.items():
        o = _BY_PARAM[param]
        if task not in o.tasks:
            raise OptionError(f"{flag} is for {'/'.join(sorted(o.tasks))} trees, and this "
                              f"is a {task} tree (see --task)")
        if kind not in o.kinds:
            raise OptionError(_kind_problem(o, flag, kind))
        value = getattr(args, param)
        if o.parse is not None:
            try:
                value = o.parse(value)
            except ValueError as exc:
                raise OptionError(f"{flag}: {exc}") from None
        params[param] = value
    if "ccp_alpha" in used and "cp" in used:
        raise OptionError(f"{used['ccp_alpha']} and {used['cp']} both choose the pruned "
                          "subtree: give one of them")
    if "priors" in used and "class_weight" in used:
        raise OptionError(f"{used['priors']} and {used['class_weight']} both set the "
                          "priors: give one of them")
    return params


def _kind_problem(o, flag, kind):
    """Why option ``o`` (given as ``flag``) does not apply to an estimator of ``kind``."""
    if kind == FOREST:
        extra = " (a forest prunes its trees by --prune cv)" if o.param == "cv" else ""
        return f"{flag} is not an option of forests (--forest, --bagging){extra}"
    if o.kinds == frozenset((CV,)):
        return f"{flag} is for cross-validation: give --cv V too"
    if o.kinds == frozenset((FOREST,)):
        return f"{flag} is for forests: give --forest or --bagging too"
    return f"{flag} is for cross-validation or forests: give --cv V, --forest or --bagging too"


def option_for_message(args, message):
    """``message`` (an estimator's error) prefixed by the option it is about, when it
    names the parameter of an option that was given; else unchanged."""
    used = given(args)
    for param in sorted(used, key=len, reverse=True):
        if re.search(rf"(?<![\w-]){re.escape(param)}(?![\w-])", str(message)):
            return f"{used[param]}: {message}"
    return str(message)


# ---------------------------------------------------------------- documentation
DOC_BEGIN = "<!-- begin: tree options, generated by python -m cartjit._cli_options -->"
DOC_END = "<!-- end: tree options -->"


def markdown():
    """The docs section listing the table (the text between the markers)."""
    lines = ["| option | parameter | values | default | meaning |", "|---|---|---|---|---|"]
    for o in OPTIONS:
        flags = ", ".join(f"`{f}`" for f in o.flags)
        if o.parse is None:
            allowed = "(a flag)"
        else:
            forms = [f"`{form}`" for form in o.parse.allowed.split("|")]
            allowed = forms[0] if len(forms) == 1 else \
                f"{', '.join(forms[:-1])} or {forms[-1]}"
        where = [] if o.tasks == BOTH else [f"{'/'.join(sorted(o.tasks))} only"]
        needs = _needs(o)
        if needs:
            where.append(re.sub(r"(--[a-z]+)", r"`\1`", needs))
        meaning = o.help + (f" ({'; '.join(where)})" if where else "")
        lines.append(f"| {flags} | `{o.param}` | {allowed} | {_default_text(o)} | "
                     f"{meaning} |")
    return "\n".join(lines) + "\n"


def _rewrite(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    start, end = text.index(DOC_BEGIN) + len(DOC_BEGIN), text.index(DOC_END)
    new = text[:start] + "\n" + markdown() + text[end:]
    if new != text:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    return new != text


if __name__ == "__main__":
    import os
    import sys
    doc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "docs", "experiments.md")
    print(f"{doc}: {'rewritten' if _rewrite(doc) else 'up to date'}", file=sys.stderr)
