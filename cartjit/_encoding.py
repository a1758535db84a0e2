"""Categorical features: which columns are categorical, their levels and their codes.

The engine sees X as one C-contiguous float64 array (n, p). This module turns what a
user passes (a pandas DataFrame with string, categorical, boolean and numeric columns,
or a NumPy array) into that array and back again at prediction time. Each feature is
of one of three kinds:

``NUMERIC``
    Its numbers; split by thresholds ``x <= c``.
``NOMINAL``
    An unordered categorical with levels ``categories[f]``: the column holds the level
    codes 0..L-1 (level code c is ``categories[f][c]``) and is split by subsets of its
    levels (docs/maths.md §7). ``n_levels[f] = L``.
``ORDINAL``
    An ordered pandas categorical: the column holds the codes of its declared categories,
    in their order, and is split by thresholds like a number. Its categories are kept
    for display (``categories[f]``), but ``n_levels[f] = 0``.

Which columns are categorical is the ``categorical_features`` parameter of the
estimators: ``"from_dtype"`` (pandas columns of dtype ``category``, object/string and
bool are nominal, an *ordered* ``category`` is ordinal, the rest numeric; NumPy input
has no categorical column), ``None`` (none; an ordered ``category`` column is still
ordinal, and a string or unordered ``category`` column is refused), or the categorical
columns as feature indices, feature names (DataFrame input) or a boolean mask of length
n_features. Listed columns are nominal whatever their dtype: their levels are the
declared categories of a ``category`` column, ``[False, True]`` for a boolean one, and
otherwise their sorted distinct values (numbers, or strings in an object array).

Missing values (docs/maths.md §8) become NaN in the float64 array, in every kind of
column: NaN in a numeric column, and NaN, None, pd.NA or NaT in a categorical one (an
object, ``category``, nullable ``boolean`` or ``string`` column); the codes of the
levels stay 0..L-1 and a missing value is never a level. Infinity stays an error.

Refused at fit, with an error naming the column: an object column mixing kinds of
values (strings and numbers, say), values other than strings, numbers and booleans,
and more than :data:`MAX_LEVELS` levels. A categorical column with a single level
present gives a ``UserWarning``: it can never be split.

At prediction time (:func:`transform`) each column must hold what it held in fit:
numbers for a numeric feature, and values comparable with the levels of a categorical
one (strings with strings, numbers or booleans with numbers or booleans); a mismatch is
a ``TypeError`` naming the column. Values are matched to the fitted levels by value, not
by a pandas ``category`` column's codes, so the order of its categories may differ from
fit. A missing value is NaN, as in fit. A level never seen in fit is coded -1, which no
split on the feature can route: at every node the case is treated as missing that
feature (surrogate splits, then the majority; docs/maths.md §8), and one
``UserWarning`` names the columns, the number of rows and some of the unseen values.
An unseen level of an ordinal feature is placed in the order when the column is an
ordered ``category`` whose categories list the fitted ones in the same order (it gets
the code halfway between its neighbours); otherwise its place is unknown and it is a
``ValueError``.

Nothing here is jitted.
"""
from __future__ import annotations

import numbers
import warnings
from typing import NamedTuple

import numpy as np

from . import _validation as V

__all__ = ["MAX_LEVELS", "NUMERIC", "NOMINAL", "ORDINAL", "Encoding", "fit_encode",
           "transform", "warn_target_in_features", "check_categorical_features",
           "has_missing", "warn_missing"]

#: Most levels a categorical feature may have. Subset splits store one bit per level
#: and node (``Tree.level_sets``) and the split search keeps per-level class counts,
#: so a column with more distinct values than this (an identifier, a free-text field)
#: is refused rather than turned into a huge, meaningless search.
MAX_LEVELS = 2**14

#: Feature kinds (:class:`Encoding.kind`).
NUMERIC, NOMINAL, ORDINAL = 0, 1, 2

#: How many unseen values the prediction-time warning quotes per column.
_QUOTED = 5


class Encoding(NamedTuple):
    """How each feature of the fit was encoded (one entry per feature).

    ``kind`` holds :data:`NUMERIC`, :data:`NOMINAL` or :data:`ORDINAL`; ``categories``
    the levels of a nominal or ordinal feature (a NumPy array, level code c is entry c)
    and ``None`` for a numeric one; ``family`` what the values were in fit:
    ``"number"``, ``"bool"`` or ``"string"``.
    """

    kind: np.ndarray
    categories: tuple
    family: tuple

    @property
    def is_categorical(self) -> np.ndarray:
        """True for the features with subset splits (nominal)."""
        return self.kind == NOMINAL

    @property
    def n_levels(self) -> np.ndarray:
        """int64 (p,): L_f of every nominal feature, 0 for the others."""
        return np.asarray([len(c) if k == NOMINAL else 0
                           for k, c in zip(self.kind, self.categories)], dtype=np.int64)

    @property
    def coded(self) -> bool:
        """Whether some feature holds level codes (nominal or ordinal)."""
        return bool(np.any(self.kind != NUMERIC))


def numeric_encoding(p):
    """The encoding of p numeric features."""
    return Encoding(np.zeros(p, dtype=np.int8), (None,) * p, ("number",) * p)


# --------------------------------------------------------------------------- the parameter

def _is_frame(X):
    return V.has_attr(X, "columns") and V.has_attr(X, "dtypes") and V.has_attr(X, "iloc")


def check_categorical_features(value, n_features, names):
    """The parameter ``categorical_features`` as a boolean mask of listed columns.

    Returns ``None`` for ``"from_dtype"`` (the dtypes decide) and an all-False mask for
    ``None``. ``names`` are the DataFrame's feature names (None for NumPy input).
    """
    allowed = ("'from_dtype', None, or the categorical columns as an array of feature "
               "indices, of feature names (DataFrame input) or a boolean mask of length "
               "n_features")
    if isinstance(value, str):
        if value == "from_dtype":
            return None
        raise ValueError(f"categorical_features must be {allowed}; got the string {value!r}"
                         + (" (to list one column, give a list: [name])"
                            if names is not None and value in set(names) else ""))
    mask = np.zeros(n_features, dtype=bool)
    if value is None:
        return mask
    if isinstance(value, (numbers.Number, np.generic)) or not hasattr(value, "__len__"):
        raise TypeError(f"categorical_features must be {allowed}; got {value!r} "
                        f"({type(value).__name__}); to list one column give a list, e.g. "
                        f"[{value!r}]")
    items = list(value.tolist() if hasattr(value, "tolist") else value)
    if not items:
        return mask
    if any(isinstance(v, (list, tuple, np.ndarray)) for v in items):
        raise ValueError(f"categorical_features must be one-dimensional: {allowed}")
    if all(isinstance(v, (bool, np.bool_)) for v in items):
        if len(items) != n_features:
            raise ValueError(
                f"categorical_features as a boolean mask must have one entry per feature "
                f"({n_features}), got {len(items)}")
        return np.asarray(items, dtype=bool)
    if all(isinstance(v, str) for v in items):
        if names is None:
            raise ValueError(
                f"categorical_features lists feature names {items[:5]!r} but X has no "
                "feature names (NumPy input, or a DataFrame whose column names are not all "
                "strings): give column indices or a boolean mask instead")
        position = {n: j for j, n in enumerate(names)}
        unknown = [v for v in items if v not in position]
        if unknown:
            raise ValueError(
                f"categorical_features names {unknown!r}, which are not columns of X "
                f"(columns: {', '.join(map(str, names))})")
        idx = [position[v] for v in items]
    elif all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))
             for v in items):
        idx = [int(v) for v in items]
        bad = [j for j in idx if not 0 <= j < n_features]
        if bad:
            raise ValueError(
                f"categorical_features has feature indices {bad} out of range: X has "
                f"{n_features} features, so indices run from 0 to {n_features - 1}")
    else:
        kinds = sorted({type(v).__name__ for v in items})
        raise TypeError(f"categorical_features must be {allowed}; got entries of type(s) "
                        f"{kinds}: {items[:5]!r}")
    seen = set()
    dup = [v for v, j in zip(items, idx) if j in seen or seen.add(j)]
    if dup:
        raise ValueError(f"categorical_features lists {dup!r} more than once")
    mask[idx] = True
    return mask


# --------------------------------------------------------------------------- columns

def _label(names, j):
    """How messages name feature j: its DataFrame name, else its index."""
    return repr(str(names[j])) if names is not None else str(j)


def _missing(values):
    """Mask of the missing entries (NaN, None, pd.NA, NaT) of a 1-d NumPy array."""
    if values.dtype.kind in "OfMm":
        import pandas as pd
        return np.asarray(pd.isna(values), dtype=bool)
    return np.zeros(values.shape[0], dtype=bool)


def _values_family(values, name, label):
    """``"number"``, ``"bool"`` or ``"string"`` for a 1-d array without missing values
    (an array of nothing but missing values is ``"number"``)."""
    kind = values.dtype.kind
    if kind == "b":
        return "bool"
    if kind in "iuf":
        return "number"
    if kind == "S":
        raise TypeError(f"{name}: column {label} holds bytes; categorical levels must be "
                        "strings, numbers or booleans (decode the bytes to str)")
    if kind == "U":
        return "string"
    if kind != "O":
        raise TypeError(f"{name}: column {label} has dtype {values.dtype}; only numeric, "
                        "boolean, string and categorical columns are supported")
    from pandas.api.types import infer_dtype
    inferred = infer_dtype(values, skipna=True)
    if inferred == "string":
        return "string"
    if inferred == "boolean":
        return "bool"
    if inferred in ("integer", "floating", "mixed-integer-float", "decimal"):
        return "number"
    if inferred == "empty":
        return "number"
    if inferred == "bytes":
        raise TypeError(f"{name}: column {label} holds bytes; categorical levels must be "
                        "strings, numbers or booleans (decode the bytes to str)")
    kinds = sorted({type(v).__name__ for v in values[~_missing(values)]})  # True == 1
    if len(kinds) > 1:
        raise TypeError(
            f"{name}: column {label} mixes values of types {kinds}; the levels of a "
            "categorical column must be all strings, all numbers or all booleans (convert "
            "the column, e.g. with .astype(str))")
    raise TypeError(f"{name}: column {label} holds values of type {kinds[0]}; categorical "
                    "levels must be strings, numbers or booleans")


def _plain_values(col):
    """The values of a column (Series or ndarray) as a NumPy array: float64 for nullable
    numbers (pd.NA becomes NaN), bool for booleans without missing values, else object."""
    if isinstance(col, np.ndarray):
        return col
    dtype = col.dtype
    if isinstance(dtype, np.dtype):
        return col.to_numpy()
    kind = getattr(dtype, "kind", "O")
    if kind in "iuf":
        return col.to_numpy(dtype=np.float64, na_value=np.nan)
    if kind == "b" and not col.isna().any():
        return col.to_numpy(dtype=bool)
    return col.to_numpy(dtype=object)


def _as_numbers(values, name, label, dtype, fitted):
    """A numeric feature's column as float64 (NaN stays NaN: the caller checks it).

    Strings are never parsed as numbers; an object column is converted if it can be.
    """
    kind = values.dtype.kind
    if kind in "biuf":
        return values.astype(np.float64)
    if kind == "O":
        from pandas.api.types import infer_dtype
        if infer_dtype(values, skipna=True) not in ("string", "bytes", "mixed",
                                                    "mixed-integer"):
            try:
                return V._object_as_float(values)  # None and pd.NA become NaN
            except (TypeError, ValueError, OverflowError):
                pass
    if fitted:
        raise TypeError(f"{name}: column {label} was numeric in fit but holds non-numeric "
                        f"values here (dtype {dtype}); pass the numbers it was fitted on")
    what = "strings" if kind in "US" else f"dtype {dtype} with non-numeric values"
    raise TypeError(
        f"{name}: column {label} has {what}; list it in categorical_features (or, with a "
        "DataFrame, use categorical_features='from_dtype' and a string or category "
        "column) to split it by subsets of its values, or convert it to numbers")


def _needs_columns(dtype, from_dtype):
    """Whether a DataFrame column of this dtype must be encoded column by column."""
    kind = getattr(dtype, "kind", "O")
    if type(dtype).__name__ == "CategoricalDtype":
        return True
    if kind == "b":
        return from_dtype
    return kind not in "iuf"


def _is_category(col):
    return type(getattr(col, "dtype", None)).__name__ == "CategoricalDtype"


def _check_levels(n, name, label):
    if n > MAX_LEVELS:
        raise ValueError(
            f"{name}: categorical column {label} has {n} distinct levels, more than "
            f"MAX_LEVELS = {MAX_LEVELS} (cartjit._encoding.MAX_LEVELS): a column with so "
            "many levels (an identifier? a free-text field?) cannot be split by subsets; "
            "drop it, group rare levels, or pass it as numbers")


def _warn_single(present, name, label, levels):
    """Warn about a single level present (none present: :func:`warn_missing` says so)."""
    if present == 1:
        level = levels[0].item() if hasattr(levels[0], "item") else levels[0]
        shown = f" ({level!r})" if len(levels) == 1 else ""
        warnings.warn(
            f"{name}: categorical column {label} has a single level in the training "
            f"data{shown}: it can never be split on", UserWarning,
            stacklevel=V.user_stacklevel())


def _fit_category(col, nominal, name, label):
    """Codes, levels and family of a pandas ``category`` column."""
    levels = np.asarray(col.cat.categories)
    codes = col.cat.codes.to_numpy()
    family = _values_family(levels, name, label) if levels.size else "string"
    if nominal:
        _check_levels(levels.shape[0], name, label)
        # the missing code -1 is counted in bin 0, apart from the levels
        present = np.count_nonzero(np.bincount(codes.astype(np.intp) + 1,
                                               minlength=levels.shape[0] + 1)[1:])
        _warn_single(present, name, label, levels)
    values = codes.astype(np.float64)
    values[codes < 0] = np.nan
    return values, levels, family


def _fit_values(values, name, label):
    """Codes 0..L-1 (NaN where missing), the sorted distinct values (levels) and their
    family."""
    import pandas as pd
    missing = _missing(values)
    given = values[~missing] if missing.any() else values
    family = _values_family(given, name, label)
    codes = np.full(values.shape[0], np.nan)
    if family == "bool":
        levels = np.array([False, True])
        codes[~missing] = np.asarray(given, dtype=bool).astype(np.float64)
        present = np.unique(codes[~missing]).shape[0]
    else:
        if given.dtype.kind == "U":
            given = given.astype(object)
        present_codes, levels = pd.factorize(given, sort=True)
        levels = np.asarray(levels)
        present = levels.shape[0]
        _check_levels(present, name, label)
        codes[~missing] = present_codes
    if present:
        _warn_single(present, name, label, levels)
    return codes, levels, family


def _fit_column(col, j, listed, from_dtype, name, names):
    """``(column as float64, kind, levels, family)`` of one column in fit."""
    label = _label(names, j)
    if _is_category(col):
        if listed or (from_dtype and not col.cat.ordered):
            codes, levels, family = _fit_category(col, True, name, label)
            return codes, NOMINAL, levels, family
        if col.cat.ordered:
            codes, levels, family = _fit_category(col, False, name, label)
            return codes, ORDINAL, levels, family
        raise TypeError(
            f"{name}: column {label} is an unordered pandas categorical but is not listed "
            "in categorical_features: list it there, use categorical_features='from_dtype', "
            "or convert it to numbers")
    values = _plain_values(col)
    dtype = getattr(col, "dtype", values.dtype)
    kind = getattr(dtype, "kind", "O")
    if listed or (from_dtype and kind in "bOUS"):
        codes, levels, family = _fit_values(values, name, label)
        return codes, NOMINAL, levels, family
    if kind not in "biufOUS":
        raise TypeError(f"{name}: column {label} has dtype {dtype}; only numeric, boolean, "
                        "string and categorical columns are supported")
    return _as_numbers(values, name, label, dtype, False), NUMERIC, None, "number"


def _as_array(X, name):
    """A non-DataFrame X as a 2-d NumPy array (any dtype), with the usual errors."""
    if X is None:
        raise TypeError(f"{name} must be an array-like of shape (n_samples, n_features), "
                        "got None")
    if V._is_sparse(X):
        raise TypeError(
            f"{name} is a sparse matrix ({type(X).__name__}); sparse input is not supported "
            f"by cartjit: pass a dense array, e.g. {name}.toarray()")
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged nested lists and the like
        raise ValueError(f"{name} could not be converted to a 2-d array: {exc}") from exc
    if arr.ndim != 2:
        V.check_X(arr, name=name)  # raises the usual "Expected 2D array" error
    return arr


def _assemble(columns):
    """Stack float64 columns into one (n, p) float64 array."""
    arr = np.empty((columns[0].shape[0], len(columns)), dtype=np.float64)
    for j, c in enumerate(columns):
        arr[:, j] = c
    return arr


def fit_encode(X, categorical_features, *, name="X"):
    """``(X as C-contiguous float64, feature names or None, Encoding)`` for ``fit``.

    Raises ``ValueError``/``TypeError`` naming the column for what cannot be encoded
    (see the module docstring); infinity in numeric columns is refused too. Missing
    values are NaN in the result.
    """
    if _is_frame(X):
        if V._is_sparse(X):
            V.check_X(X, name=name)  # the sparse-input error
        names = V._frame_feature_names(X)
        n, p = X.shape
        listed = check_categorical_features(categorical_features, p, names)
        from_dtype = listed is None
        if not any(_needs_columns(dt, from_dtype) for dt in V.frame_dtypes(X)) and \
                not (listed is not None and listed.any()):
            arr, names = V.check_X(X, name=name, allow_nan=True)
            return arr, names, numeric_encoding(arr.shape[1])
        columns = [X.iloc[:, j] for j in range(p)]
    else:
        arr = _as_array(X, name)
        n, p = arr.shape
        listed = check_categorical_features(categorical_features, p, None)
        if listed is None or not listed.any():
            arr, names = V.check_X(X if not isinstance(X, np.ndarray) else arr, name=name,
                                   allow_nan=True)
            return arr, names, numeric_encoding(arr.shape[1])
        names = None
        from_dtype = False
        columns = [arr[:, j] for j in range(p)]
    if n < 1 or p < 1:
        V.check_X(np.empty((n, p)), name=name)  # the usual shape errors
    kinds, categories, families, out = [], [], [], []
    for j, col in enumerate(columns):
        values, kind, levels, family = _fit_column(
            col, j, listed is not None and bool(listed[j]), from_dtype, name, names)
        out.append(values)
        kinds.append(kind)
        categories.append(levels)
        families.append(family)
    arr, _ = V.check_X(_assemble(out), name=name, allow_nan=True)
    return arr, names, Encoding(np.asarray(kinds, dtype=np.int8), tuple(categories),
                                tuple(families))


# --------------------------------------------------------------------------- predicting

def _compatible(fitted, given):
    """Whether values of family ``given`` can be matched with levels of ``fitted``."""
    numeric = ("number", "bool")
    return (fitted in numeric and given in numeric) or fitted == given


def _lookup(levels, values):
    """Code of each value among ``levels`` (-1 where absent), matched by value."""
    import pandas as pd
    if levels.dtype.kind in "biuf" and values.dtype.kind in "biuf":
        index = pd.Index(levels.astype(np.float64))
        return index.get_indexer(values.astype(np.float64))
    index = pd.Index(levels.astype(object), dtype=object)
    return index.get_indexer(values.astype(object))


def _ordinal_codes(cats, levels, codes_of_cats, name, label):
    """Codes of the categories of an ordered ``category`` column at prediction time;
    an unseen category gets the code halfway between its fitted neighbours."""
    known = codes_of_cats[codes_of_cats >= 0]
    if np.any(np.diff(known) <= 0):
        raise ValueError(
            f"{name}: ordinal column {label} orders the levels seen in fit differently "
            f"({list(cats[codes_of_cats >= 0])}) than in fit ({list(levels)})")
    out = codes_of_cats.astype(np.float64)
    previous = -1.0
    for i, c in enumerate(codes_of_cats):
        if c >= 0:
            previous = float(c)
        else:
            out[i] = previous + 0.5
    return out


def _transform_column(col, j, enc, name, names, unseen):
    """One column at prediction time as float64 (codes for categorical features)."""
    label = _label(names, j)
    kind, levels, fitted_family = enc.kind[j], enc.categories[j], enc.family[j]
    if kind == NUMERIC:
        if _is_category(col):
            raise TypeError(f"{name}: column {label} was numeric in fit but is a pandas "
                            "categorical here; pass the numbers the estimator was fitted on")
        values = _plain_values(col)
        return _as_numbers(values, name, label, getattr(col, "dtype", values.dtype), True)
    if _is_category(col):
        cats = np.asarray(col.cat.categories)
        given = _values_family(cats, name, label) if cats.size else fitted_family
        _check_family(fitted_family, given, name, label, col.dtype)
        cat_codes = col.cat.codes.to_numpy()
        missing = cat_codes < 0
        codes_of_cats = _lookup(levels, cats)
        if kind == ORDINAL and col.cat.ordered and np.any(codes_of_cats < 0):
            mapped = _ordinal_codes(cats, levels, codes_of_cats, name, label)
            bad = ~missing & (codes_of_cats[cat_codes] < 0)
            if bad.any():
                _note_unseen(unseen, label, cats[cat_codes[bad]], kind)
            return np.where(missing, np.nan, mapped[cat_codes])
        codes = codes_of_cats[cat_codes]
    else:
        values = _plain_values(col)
        missing = _missing(values)
        present = values[~missing] if missing.any() else values
        if present.shape[0]:
            given = _values_family(present, name, label)
            _check_family(fitted_family, given, name, label,
                          getattr(col, "dtype", values.dtype))
        codes = np.full(values.shape[0], -1, dtype=np.int64)
        codes[~missing] = _lookup(levels, present)
    bad = ~missing & (codes < 0)
    if bad.any():
        values = np.asarray(col, dtype=object)[bad]
        if kind == ORDINAL:
            shown = ", ".join(repr(v) for v in _few(values))
            raise ValueError(
                f"{name}: ordinal column {label} holds levels not seen in fit ({shown}), "
                "whose place in the order is unknown; pass the column as an ordered pandas "
                "categorical listing the fitted categories in their order, plus the new "
                "ones where they belong")
        _note_unseen(unseen, label, values, kind)
    return np.where(missing, np.nan, codes.astype(np.float64))


def _few(values):
    import pandas as pd
    return list(pd.unique(np.asarray(values, dtype=object)))[:_QUOTED]


def _note_unseen(unseen, label, values, kind):
    unseen.append((label, int(len(values)), _few(values), kind))


def _check_family(fitted, given, name, label, dtype):
    if not _compatible(fitted, given):
        what = {"number": "numbers", "bool": "booleans", "string": "strings"}
        raise TypeError(
            f"{name}: categorical column {label} held {what[fitted]} in fit but holds "
            f"{what[given]} here (dtype {dtype}); pass the column as it was in fit")


def _warn_unseen(unseen, name, n_rows):
    parts = []
    for label, count, values, kind in unseen:
        shown = ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in values)
        more = ", ..." if count > len(values) and len(values) == _QUOTED else ""
        rows = "row" if count == 1 else "rows"
        parts.append(f"column {label}: {count} {rows} ({shown}{more})")
    what = []
    if any(kind == NOMINAL for *_, kind in unseen):
        what.append("such a level is treated as a missing value of its column (at a split "
                    "on it, the row follows the surrogate splits, then the majority)")
    if any(kind == ORDINAL for *_, kind in unseen):
        what.append("a new level of an ordinal column is placed between its neighbours in "
                    "the column's order")
    rows = "row" if n_rows == 1 else "rows"
    warnings.warn(f"{name} holds levels not seen in fit in {'; '.join(parts)} (of its "
                  f"{n_rows} {rows}); {' and '.join(what)}",
                  UserWarning, stacklevel=V.user_stacklevel())


def transform(X, enc, n_features, estimator=None, *, name="X", check_finite=True):
    """X at prediction time as C-contiguous float64, encoded as in fit.

    Feature names are not checked here (the caller runs ``check_feature_names``).
    Missing values are NaN, a level never seen in fit -1; infinity is refused, here or,
    with ``check_finite=False``, by the caller (the prediction kernel counts the
    infinite entries while it reads the rows).
    """
    if _is_frame(X):
        if V._is_sparse(X):
            V.check_X(X, name=name)  # the sparse-input error
        plain = not enc.coded and not any(_needs_columns(dt, False) for dt in X.dtypes)
        names = list(map(str, X.columns)) if V._frame_feature_names(X) is not None else None
        columns = None if plain else [X.iloc[:, j] for j in range(X.shape[1])]
    else:
        plain = not enc.coded
        if not plain:
            arr = _as_array(X, name)
            names = None
            columns = [arr[:, j] for j in range(arr.shape[1])]
    if plain:
        return V.check_X(X, name=name, estimator=estimator, n_features=n_features,
                         allow_nan=True, check_finite=check_finite)[0]
    if len(columns) != n_features:
        who = type(estimator).__name__ if estimator is not None else "the estimator"
        raise ValueError(f"X has {len(columns)} features, but {who} is expecting "
                         f"{n_features} features as input")
    n_rows = len(columns[0])
    if n_rows < 1:
        V.check_X(np.empty((0, n_features)), name=name)  # the "0 sample(s)" error
    unseen = []
    out = [_transform_column(col, j, enc, name, names, unseen)
           for j, col in enumerate(columns)]
    if unseen:
        _warn_unseen(unseen, name, n_rows)
    return V.check_X(_assemble(out), name=name, allow_nan=True, check_finite=check_finite)[0]


# --------------------------------------------------------------------------- target leaks

#: Rows from which a numeric feature equal to the target warns (see
#: :func:`warn_target_in_features`).
MIN_ROWS_NUMERIC_TARGET = 30


def warn_target_in_features(X, enc, y, names):
    """Warn when a feature column equals the target on every row (the target listed
    among the features by mistake: the tree would split on it alone).

    ``X`` is the encoded array, ``y`` the target as given (labels or numbers). A
    categorical column is compared level by label on any sample; a numeric one only from
    ``MIN_ROWS_NUMERIC_TARGET`` rows on and with more than two distinct values, since a
    small sample or a 0/1 indicator equal to 0/1 labels is a plausible perfect predictor.
    """
    y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y).reshape(-1)
    n = X.shape[0]
    if n < 2 or y.shape[0] != n:
        return
    # most columns differ from y in their first entry: the cheap tests come first, and
    # whether y takes two values at all is asked only of a column found equal to it
    numeric_rule = n >= MIN_ROWS_NUMERIC_TARGET and y.dtype.kind in "biuf"
    y_float = None
    head = min(n, 32)
    for j in range(X.shape[1]):
        if enc.kind[j] == NUMERIC:
            if not numeric_rule:
                continue
            if y_float is None:
                y_float = y.astype(np.float64)
            if X[0, j] != y_float[0] or not np.array_equal(X[:head, j], y_float[:head]):
                continue
            same = (np.array_equal(X[:, j], y_float)
                    and np.unique(y_float).shape[0] > 2)
        else:
            levels = np.asarray(enc.categories[j], dtype=object)
            if all(isinstance(v, numbers.Number) for v in levels) and (
                    n < MIN_ROWS_NUMERIC_TARGET or len(levels) <= 2):
                continue  # numbers as levels: the numeric rule (a plausible predictor)
            if np.isnan(X[:head, j]).any():
                continue  # a missing value: the column is not a copy of y
            # the first rows decide most columns; the whole column only after them
            if not np.all(levels[X[:head, j].astype(np.intp)] == y[:head].astype(object)):
                continue
            if np.isnan(X[:, j]).any():
                continue
            same = bool(np.all(levels[X[:, j].astype(np.intp)] == y.astype(object)))
        if same and _takes_two_values(y):
            warnings.warn(
                f"feature {_label(names, j)} equals the target y on every row: is the "
                "target among the features by mistake? The tree would split on it alone",
                UserWarning, stacklevel=V.user_stacklevel())


def _takes_two_values(y):
    """Whether y holds two distinct values (``False`` for labels that cannot be sorted:
    checking y refuses them)."""
    try:
        return np.unique(y[: min(y.shape[0], 64)]).shape[0] > 1 or np.unique(y).shape[0] > 1
    except TypeError:
        return False


# --------------------------------------------------------------------------- missing values

def has_missing(X):
    """Whether the float64 array X (no infinity: checked before) holds a NaN."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(X, axis=None)  # NaN propagates; a huge sum may overflow
    return bool(np.isnan(total)) or (not np.isfinite(total) and bool(np.isnan(X).any()))


def warn_missing(X, names):
    """Warn about the learning sample's missing values that change what can be learnt.

    ``X`` holds the cases that take part in the fit (NaN: missing). A feature missing on
    every case can never be split on (nor serve as a surrogate): one ``UserWarning``
    names such features. A case missing every feature is kept (it stays where the
    majority sends it, docs/maths.md §8): one ``UserWarning`` gives their number. One
    compiled pass over the rows counts both. Returns the number of missing values.
    """
    n, p = X.shape
    if not has_missing(X):
        return 0
    from .engine.missing import missing_tally  # the kernel: one pass over the rows
    from .engine.presort import as_kernel_array

    per_column = np.zeros(p, dtype=np.int64)
    n_every = int(missing_tally(as_kernel_array(X, np.float64), per_column))
    total = int(per_column.sum())
    empty = [_label(names, j) for j in np.flatnonzero(per_column == n)]
    if empty:
        which = ", ".join(empty[:10]) + (f", ... ({len(empty)} in all)" if len(empty) > 10
                                         else "")
        warnings.warn(
            f"X: feature(s) {which} are missing on every row taking part in the fit: "
            "they can never be split on nor serve as a surrogate split",
            UserWarning, stacklevel=V.user_stacklevel())
    if n_every and len(empty) < p:
        rows = "row is" if n_every == 1 else "rows are"
        warnings.warn(
            f"X: {n_every} {rows} missing every feature; they are kept: at each split "
            "they follow the majority (use_surrogate=2) or stop in the node",
            UserWarning, stacklevel=V.user_stacklevel())
    return total
