"""Coercion and checks of user input. Nothing here is jitted.

Every public entry point converts its arguments here before any kernel runs, so that a
bad argument becomes a ``ValueError`` or ``TypeError`` naming the argument, what was
given and what is allowed — never a Numba typing error or a crash inside a kernel.
Messages for the common cases follow scikit-learn's wording, which its estimator
checks (and users moving over) recognise.
"""
from __future__ import annotations

import functools
import numbers
import os
import sys
import warnings

import numpy as np

from .engine.limits import check_allocation
from .engine.presort import as_kernel_array  # the engine's own (the engine never imports this module)
from .engine.scaling import (MAX_COST_RANGE, MAX_PRIOR_RANGE, MAX_WEIGHT_RANGE, MAX_Y_SPREAD,
                       MIN_COST, MIN_Y_SPREAD, power_of_two)
from .engine.impurity import CLASSIFICATION_CRITERIA, REGRESSION_CRITERIA

#: The criterion names each kind of tree accepts (the ``criterion`` parameter).
CLASSIFIER_CRITERIA = tuple(CLASSIFICATION_CRITERIA)
REGRESSOR_CRITERIA = tuple(REGRESSION_CRITERIA)

__all__ = ["NotFittedError", "as_kernel_array", "check_X", "check_y_class", "check_y_reg",
           "check_sample_weight", "check_int", "check_float", "check_choice",
           "check_priors", "check_cost", "check_class_weight", "check_criterion",
           "check_feature_names", "data_conversion_warning", "not_fitted_error",
           "user_stacklevel", "missing_targets", "present_targets", "check_max_surrogate",
           "check_missing_params",
           "raise_non_finite", "CLASSIFIER_CRITERIA", "REGRESSOR_CRITERIA"]


class NotFittedError(ValueError, AttributeError):
    """Raised when a method that needs a fitted estimator is called before ``fit``."""


@functools.lru_cache(maxsize=None)
def _not_fitted_with(sk_base):
    """A subclass of both cartjit's and scikit-learn's ``NotFittedError``.

    It pickles as a plain cartjit ``NotFittedError`` (the class is made at run time).
    """
    def __reduce__(self):
        return NotFittedError, self.args

    return type("NotFittedError", (NotFittedError, sk_base),
                {"__module__": __name__, "__doc__": NotFittedError.__doc__,
                 "__reduce__": __reduce__})


def not_fitted_error(message):
    """The exception to raise before ``fit``: cartjit's ``NotFittedError``.

    When scikit-learn is loaded it is also an instance of
    ``sklearn.exceptions.NotFittedError``, so that code (and sklearn's estimator checks)
    catching sklearn's class sees it, without importing scikit-learn here.
    """
    sk = sys.modules.get("sklearn.exceptions")
    if sk is None:
        return NotFittedError(message)
    return _not_fitted_with(sk.NotFittedError)(message)


def user_stacklevel():
    """``stacklevel`` pointing a warning at the first frame outside cartjit (the user's
    call of ``fit``, ``predict``, ...); call it from the function that warns."""
    root = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(root):
        frame, level = frame.f_back, level + 1
    return level


def data_conversion_warning():
    """scikit-learn's ``DataConversionWarning`` if it is loaded, else ``UserWarning``."""
    sk = sys.modules.get("sklearn.exceptions")
    if sk is not None:
        return sk.DataConversionWarning
    return UserWarning


def has_attr(obj, name) -> bool:
    """``hasattr(obj, name)`` without evaluating a property of its class (pandas builds a
    new Series for ``DataFrame.dtypes`` at every access)."""
    return hasattr(type(obj), name) or hasattr(obj, name)


def frame_dtypes(X) -> list:
    """``list(X.dtypes)`` of a DataFrame, read from its block manager where pandas has
    one (what ``DataFrame.dtypes`` does before wrapping them in a new Series)."""
    get = getattr(getattr(X, "_mgr", None), "get_dtypes", None)
    if get is not None:
        try:
            dtypes = list(get())
            if len(dtypes) == X.shape[1]:
                return dtypes
        except Exception:  # noqa: BLE001 - another pandas: the public way below
            pass
    return list(X.dtypes)


def _is_sparse(obj) -> bool:
    """scipy sparse matrices/arrays, and pandas objects with sparse columns."""
    if hasattr(obj, "tocsr"):
        return True
    if has_attr(obj, "columns") and has_attr(obj, "dtypes"):  # DataFrame
        dtypes = frame_dtypes(obj)
    elif has_attr(obj, "index") and has_attr(obj, "dtype"):  # Series
        dtypes = [obj.dtype]
    else:
        return False
    # checking the dtypes avoids building pandas' .sparse accessor on every call
    return any(type(dt).__name__ == "SparseDtype" for dt in dtypes)


def _type_name(obj) -> str:
    return type(obj).__name__


def _frame_feature_names(X):
    """Column names of a DataFrame when they are all strings (scikit-learn's rule)."""
    cols = list(X.columns)
    if cols and all(isinstance(c, str) for c in cols):
        return np.asarray(cols, dtype=object)
    if any(isinstance(c, str) for c in cols):
        raise TypeError(
            "X: feature names are only supported if all input features have string "
            f"names, but the column names have types {sorted({type(c).__name__ for c in cols})}; "
            "convert them all to strings, e.g. X.columns = X.columns.astype(str)")
    return None


def _as_numeric_2d(X, name):
    if X is None:
        raise TypeError(f"{name} must be an array-like of shape (n_samples, n_features), got None")
    if _is_sparse(X):
        raise TypeError(
            f"{name} is a sparse matrix ({_type_name(X)}); sparse input is not supported by "
            f"cartjit: pass a dense array, e.g. {name}.toarray()")
    feature_names = None
    if has_attr(X, "columns") and has_attr(X, "dtypes"):  # pandas DataFrame
        feature_names = _frame_feature_names(X)
        for col, dt in zip(X.columns, frame_dtypes(X)):
            kind = getattr(dt, "kind", "O")
            if kind not in "biuf":
                raise TypeError(
                    f"{name}: column {col!r} has dtype {dt}; here only numeric and boolean "
                    "columns are supported (the estimators take string and categorical "
                    "columns through their categorical_features parameter)")
        arr = X.to_numpy(dtype=np.float64, na_value=np.nan)  # pd.NA is a missing value
    else:
        try:
            arr = np.asarray(X)
        except Exception as exc:  # ragged nested lists and the like
            raise ValueError(f"{name} could not be converted to a 2-d numeric array: {exc}") from exc
        if arr.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: {name} has dtype {arr.dtype}")
        if arr.dtype.kind in "US":
            # Like scikit-learn: strings are never parsed as numbers behind the user's back.
            raise TypeError(
                f"{name} has string dtype {arr.dtype}; cartjit needs numeric features: "
                f"convert them explicitly (e.g. {name}.astype(float)), or list the "
                "categorical columns in categorical_features (their distinct values are "
                "then the levels)")
        if arr.dtype.kind == "O":
            try:
                arr = _object_as_float(arr)
            except (TypeError, ValueError, OverflowError) as exc:
                raise TypeError(
                    f"{name} must contain numbers, got dtype {arr.dtype} with values that "
                    f"cannot be converted to float: {exc}") from exc
        elif arr.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(
            f"Expected 2D array, got {arr.ndim}D array instead: {name} must have shape "
            "(n_samples, n_features). Reshape your data either using array.reshape(-1, 1) "
            "if your data has a single feature or array.reshape(1, -1) if it contains a "
            "single sample.")
    return arr, feature_names


def _object_as_float(arr):
    """An object array as float64, its missing entries (None, NaN, pd.NA) as NaN."""
    try:
        return arr.astype(np.float64)
    except TypeError:
        import pandas as pd  # only for pd.NA, which float() refuses
        missing = pd.isna(arr)
        if not missing.any():
            raise
        out = np.where(missing, np.nan, arr)
        return out.astype(np.float64)


def check_X(X, *, name="X", estimator=None, n_features=None, min_samples=1,
            check_finite=True, allow_nan=False):
    """Return ``(X as C-contiguous float64, feature names or None)`` after checking it.

    With ``n_features`` given (predicting), the number of columns must match.
    ``check_finite=False`` leaves the NaN/inf check to the caller (prediction does it
    inside its kernel and calls :func:`raise_non_finite`). ``allow_nan=True`` accepts
    NaN as a missing value (None and pd.NA in object or nullable columns become NaN);
    infinity is refused all the same.
    """
    arr, feature_names = _as_numeric_2d(X, name)
    n, p = arr.shape
    if p < 1:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={arr.shape}) while a minimum of 1 is "
            f"required: {name} must have at least one feature")
    if n < min_samples:
        raise ValueError(
            f"Found array with {n} sample(s) (shape={arr.shape}) while a minimum of "
            f"{min_samples} is required: {name} must have at least {min_samples} sample(s)")
    if n_features is not None and p != n_features:
        who = type(estimator).__name__ if estimator is not None else "the estimator"
        raise ValueError(
            f"X has {p} features, but {who} is expecting {n_features} features as input")
    arr = as_kernel_array(arr, np.float64)
    # NaN and ±inf propagate into a sum, which is much cheaper than isfinite(arr).all();
    # only a non-finite sum (or an overflowing one) needs the full check.
    if check_finite:
        with np.errstate(over="ignore", invalid="ignore"):  # huge finite values may overflow
            total = np.add.reduce(arr, axis=None)
        if not np.isfinite(total):
            # raises only if an entry really is NaN (unless allowed) or inf
            raise_non_finite(arr, name, allow_nan=allow_nan)
    if n >= 2**31:
        raise ValueError(f"{name} has {n} rows; at most 2**31 - 1 are supported")
    return arr, feature_names


def raise_non_finite(arr, name="X", *, allow_nan=False):
    """Raise the ValueError for NaN (unless ``allow_nan``) or infinite entries of ``arr``,
    if it has any."""
    if not allow_nan and np.isnan(arr).any():
        raise ValueError(f"Input {name} contains NaN: missing values are not supported")
    if np.isinf(arr).any():
        raise ValueError(
            f"Input {name} contains infinity or a value too large for dtype('float64')")


def _as_1d(y, name, n_samples):
    if y is None:
        raise ValueError(
            f"requires y to be passed, but the target y is None: {name} must be an "
            "array-like of shape (n_samples,)")
    if _is_sparse(y):
        raise TypeError(f"{name} is sparse; sparse input is not supported: pass a dense array")
    arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change the "
            "shape of y to (n_samples,), for example using ravel().",
            data_conversion_warning(), stacklevel=3)
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be 1-dimensional of shape (n_samples,), got shape {arr.shape}; "
            "multi-output targets are not supported")
    if arr.shape[0] != n_samples:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: X has {n_samples} "
            f"rows but {name} has {arr.shape[0]}")
    return arr


#: Integer labels spanning fewer values than this are coded by counting them (one pass
#: and a table look-up, rather than a sort).
_COUNTED_LABEL_SPAN = 1 << 16


def check_y_class(y, n_samples, name="y"):
    """Return ``(classes, encoded)`` for classification labels (any sortable label type)."""
    arr = _as_1d(y, name, n_samples)
    if arr.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} has dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            if np.isnan(arr).any():
                raise ValueError(f"Input {name} contains NaN")
            raise ValueError(f"Input {name} contains infinity or a value too large for dtype('float64')")
        if np.any(arr != np.round(arr)):
            raise ValueError(
                f"Unknown label type: continuous. {name} looks like a regression target; "
                "use CARTRegressor, or pass class labels (integers or strings)")
    if arr.dtype.kind == "O":
        kinds = set(map(type, arr))  # one pass; the NaN search only where floats are
        if type(None) in kinds or (any(issubclass(k, float) for k in kinds) and any(
                isinstance(v, float) and np.isnan(v) for v in arr)):
            raise ValueError(f"Input {name} contains NaN or None labels")
        if len(kinds) > 1 and not all(issubclass(k, numbers.Number) for k in kinds) \
                and not kinds <= _STRING_TYPES:  # str and NumPy's str_ are one type
            raise TypeError(
                f"{name} mixes label types {sorted(k.__name__ for k in kinds)}; "
                "use labels of one type (all strings or all numbers)")
    if arr.dtype.kind in "iu" and arr.size:  # integers: count them where they span
        lo, hi = int(arr.min()), int(arr.max())  # few values (the usual 0..K-1)
        if hi - lo < _COUNTED_LABEL_SPAN and hi <= np.iinfo(np.intp).max:
            shifted = arr.astype(np.intp) - lo
            seen = np.bincount(shifted, minlength=hi - lo + 1) > 0
            code = np.cumsum(seen, dtype=np.int32) - 1  # the code of every present value
            return ((np.flatnonzero(seen) + lo).astype(arr.dtype),
                    as_kernel_array(code[shifted], np.int32))
    if arr.dtype.kind in "biuf":  # numbers (no NaN here): a search is cheaper than
        classes = np.unique(arr)  # unique's inverse, and gives the same codes
        return classes, as_kernel_array(np.searchsorted(classes, arr), np.int32)
    if arr.dtype.kind == "O" and kinds <= _STRING_TYPES:
        return _code_strings(arr)
    try:
        classes, encoded = np.unique(arr, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"{name} labels cannot be sorted: {exc}") from exc
    return classes, as_kernel_array(encoded.reshape(-1), np.int32)


#: Label types coded by :func:`_code_strings`.
_STRING_TYPES = frozenset((str, np.str_))


def _code_strings(arr):
    """``(classes, codes)`` of an object array of strings, as ``np.unique(arr,
    return_inverse=True)`` gives them: the distinct strings by hashing, then only those
    sorted (a sort of every label would compare Python strings n log n times)."""
    distinct = sorted(dict.fromkeys(arr.tolist()))
    classes = np.empty(len(distinct), dtype=object)
    classes[:] = distinct
    code = {label: k for k, label in enumerate(distinct)}
    return classes, np.fromiter(map(code.__getitem__, arr.tolist()), np.int32,
                                arr.shape[0])


def check_y_reg(y, n_samples, name="y"):
    """Return y as a contiguous float64 array for regression."""
    arr = _as_1d(y, name, n_samples)
    if arr.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} has dtype {arr.dtype}")
    try:
        arr = as_kernel_array(arr, np.float64)
    except OverflowError as exc:  # Python ints beyond float64
        raise ValueError(f"Input {name} contains infinity or a value too large for "
                         f"dtype('float64'): {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric for regression: {exc}") from exc
    if not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"Input {name} contains NaN")
        raise ValueError(f"Input {name} contains infinity or a value too large for dtype('float64')")
    if arr.size:
        with np.errstate(over="ignore"):
            spread = float(np.max(arr) - np.min(arr))
        # The kernels see y divided by a power of two (cartjit.engine.scaling); what must stay
        # in float64's range are the reported squared errors: R(t), α, the CV risks.
        if spread > MAX_Y_SPREAD or max(np.max(arr), -np.min(arr)) > MAX_Y_SPREAD:
            raise ValueError(
                f"{name} spans {np.min(arr):.3g} to {np.max(arr):.3g}: squared errors of such "
                "values overflow float64, so no risk R(t) can be computed; rescale y "
                "(e.g. divide it by a power of 10) before fitting")
        if 0 < spread < MIN_Y_SPREAD:
            raise ValueError(
                f"{name} spans only {spread:.3g} (from {np.min(arr):.3g} to "
                f"{np.max(arr):.3g}): squared errors of such differences underflow "
                f"float64 (spreads below {MIN_Y_SPREAD:.3g} are refused), so risks R(t) "
                "and α cannot be reported; rescale y (e.g. multiply it by a power of 10) "
                "before fitting")
    return arr


def check_sample_weight(sample_weight, n_samples, *, for_fit=True):
    """Return ``(weights float64, all_ones)``; weights must be finite and >= 0, not all 0.

    ``for_fit`` also refuses what the tree kernels cannot carry exactly (see
    :mod:`cartjit.engine.scaling`): subnormal weights, and weights below 1/``MAX_WEIGHT_RANGE``
    of the total. A total that overflows float64 is always refused.
    """
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64), True
    if isinstance(sample_weight, (bool, np.bool_)):
        raise TypeError(
            f"sample_weight must be an array of weights or a number, got {sample_weight!r}")
    if isinstance(sample_weight, numbers.Number):
        try:
            w = np.full(n_samples, float(sample_weight))
        except OverflowError as exc:  # a Python int beyond float64
            raise ValueError("sample_weight must be finite (no NaN or infinity), got an "
                             "integer beyond float64's range") from exc
    else:
        w = np.asarray(sample_weight)
        if w.dtype.kind not in "biuf":
            raise TypeError(f"sample_weight must be numeric, got dtype {w.dtype}")
        w = w.astype(np.float64)
        if w.ndim != 1:
            raise ValueError(
                f"sample_weight must be 1D array or scalar, got shape {w.shape}")
        if w.shape[0] != n_samples:
            raise ValueError(
                f"sample_weight.shape == ({w.shape[0]},), expected ({n_samples},): one "
                "weight per row of X")
    if np.isnan(w).any():
        raise ValueError(
            f"sample_weight has {int(np.count_nonzero(np.isnan(w)))} missing (NaN) "
            "entries: sample_weight must be finite (no NaN or infinity); every row needs "
            "a weight (give 0 to leave a row out of the fit)")
    if not np.isfinite(w).all():
        raise ValueError("sample_weight must be finite (no NaN or infinity)")
    if np.any(w < 0):
        raise ValueError("Negative values in data passed to sample_weight: weights must be >= 0")
    if not np.any(w > 0):
        raise ValueError("sample_weight must have at least one positive entry (all are zero)")
    _check_weight_range(w, for_fit)
    return as_kernel_array(w, np.float64), bool(np.all(w == 1.0))


def _check_weight_range(w, for_fit):
    """Refuse weights the kernels cannot carry exactly once rescaled (cartjit.engine.scaling)."""
    positive = w[w > 0]
    w_min, w_max = float(positive.min()), float(positive.max())
    if for_fit and w_min < np.finfo(np.float64).tiny:
        raise ValueError(
            f"sample_weight has a positive entry {w_min:.3g} below the smallest normal "
            f"float64 ({np.finfo(np.float64).tiny:.3g}), which carries too few digits; "
            "rescale the weights (multiply them all by a power of 10) or set it to 0")
    scale = power_of_two(w_max)
    with np.errstate(over="ignore"):
        total = np.sum(w / scale)
        if not np.isfinite(total * scale):
            raise ValueError(
                f"sample_weight sums to more than the largest float64 ({w_max:.3g} is the "
                "largest weight): weighted node sizes cannot be reported; rescale the "
                "weights (divide them all by a power of 10)")
    if for_fit and total > (w_min / scale) * MAX_WEIGHT_RANGE:
        raise ValueError(
            f"sample_weight spans {w_min:.3g} to {w_max:.3g} (total {total * scale:.3g}): "
            f"a positive weight below 1/{MAX_WEIGHT_RANGE:.3g} of the total is too small "
            "for float64's sums of weights, which would carry it with too few digits or "
            "drop it, so splits between such cases would be decided by rounding; set "
            "negligible weights to 0 or compress their range")


def missing_targets(y, n_samples, name="y"):
    """``(y as a 1-d array, mask of its missing entries)``.

    Missing: NaN in a float array; None, NaN, pd.NA and NaT in an object array or a
    nullable pandas column. The shape is checked as in :func:`check_y_class`.
    """
    if hasattr(y, "isna") and hasattr(y, "to_numpy") and getattr(y, "ndim", 1) == 1:
        # the column's own array answers without building a Series
        values = getattr(y, "array", y)
        missing = np.asarray(values.isna() if hasattr(values, "isna") else y.isna(),
                             dtype=bool)
        plain = isinstance(getattr(y, "dtype", None), np.dtype) and y.dtype.kind == "f"
        if missing.any() and not plain:  # a nullable column (Int64, boolean, string):
            # NA is missing. A NumPy float column keeps its dtype, as a float array
            # does: its labels stay float64 (an object array of floats could not be
            # saved in a model file)
            arr = np.asarray(y.to_numpy(dtype=object))
            arr = _as_1d(arr, name, n_samples)
            return arr, missing
        arr = _as_1d(y, name, n_samples)
        if missing.shape == arr.shape:  # the column said it: no second search
            return arr, missing
    arr = _as_1d(y, name, n_samples)
    kind = arr.dtype.kind
    if kind == "f":
        return arr, np.isnan(arr)
    if kind == "O":
        import pandas as pd
        return arr, np.asarray(pd.isna(arr), dtype=bool)
    if kind == "M" or kind == "m":
        return arr, np.isnat(arr)
    return arr, np.zeros(arr.shape[0], dtype=bool)


def present_targets(y, dtype):
    """``y`` (an array from :func:`missing_targets`) with its missing entries dropped,
    in the NumPy dtype of the nullable pandas column it came from (``dtype``: Int64,
    UInt8, boolean, Float64, ...): the labels such a column holds without a missing
    value, not Python objects (which a model file could not save). Anything else is
    returned as it is."""
    numpy_dtype = getattr(dtype, "numpy_dtype", None)
    if y.dtype.kind != "O" or not isinstance(numpy_dtype, np.dtype) or \
            numpy_dtype.kind not in "biuf":
        return y
    return y.astype(numpy_dtype)


def check_max_surrogate(value):
    """``max_surrogate``: ``"auto"`` (returned as is) or an integer >= 0."""
    if isinstance(value, str):
        if value == "auto":
            return value
        raise ValueError(f"max_surrogate must be 'auto' or an integer >= 0, got {value!r}")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"max_surrogate must be 'auto' or an integer >= 0, got {value!r} "
                        f"({_type_name(value)})")
    if value < 0:
        raise ValueError(f"max_surrogate must be 'auto' or an integer >= 0, got {value}")
    return int(value)


def check_missing_params(max_surrogate, use_surrogate, surrogate_style, max_competitor):
    """The missing-value parameters, checked: ``(max_surrogate ("auto" or int),
    use_surrogate, surrogate_style, max_competitor)``."""
    max_surrogate = check_max_surrogate(max_surrogate)
    for name, value, allowed in (("use_surrogate", use_surrogate, (0, 1, 2)),
                                 ("surrogate_style", surrogate_style, (0, 1))):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be one of {list(allowed)}, got {value!r} "
                            f"({_type_name(value)})")
        if int(value) not in allowed:
            raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    max_competitor = check_int(max_competitor, "max_competitor", low=0)
    return max_surrogate, int(use_surrogate), int(surrogate_style), max_competitor


def check_int(value, name, *, low=None, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        allowed = f"an integer >= {low}" if low is not None else "an integer"
        if allow_none:
            allowed += " or None"
        raise TypeError(f"{name} must be {allowed}, got {value!r} ({_type_name(value)})")
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def check_float(value, name, *, low=0.0, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number >= {low}, got {value!r} ({_type_name(value)})")
    try:
        value = float(value)
    except OverflowError as exc:  # a Python int beyond float64
        raise ValueError(f"{name} must be a finite number >= {low}, got an integer beyond "
                         "float64's range") from exc
    if not np.isfinite(value) or value < low:
        raise ValueError(f"{name} must be a finite number >= {low}, got {value}")
    return value


def check_choice(value, name, allowed):
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, got {value!r}")
    return value


def check_priors(priors, counts):
    """π from ``"empirical"``, ``"equal"`` or given values (one per class, > 0, sum 1)."""
    n_classes = counts.shape[0]
    if isinstance(priors, str):
        check_choice(priors, "priors", ("empirical", "equal"))
        if priors == "empirical":
            return counts / counts.sum()
        return np.full(n_classes, 1.0 / n_classes)
    try:
        arr = np.asarray(priors, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(
            "priors must be 'empirical', 'equal' or an array of one positive number per "
            f"class summing to 1, got {priors!r}") from exc
    if arr.ndim != 1 or arr.shape[0] != n_classes:
        raise ValueError(f"priors must have one entry per class ({n_classes}), got shape {arr.shape}")
    if not np.isfinite(arr).all() or np.any(arr <= 0):
        raise ValueError(f"priors must all be > 0, got {arr.tolist()}")
    if abs(arr.sum() - 1.0) > 1e-8:
        raise ValueError(f"priors must sum to 1, got sum {float(arr.sum())!r}")
    if arr.max() > arr.min() * MAX_PRIOR_RANGE:
        raise ValueError(
            f"priors span {arr.min():.3g} to {arr.max():.3g}, a ratio over "
            f"{MAX_PRIOR_RANGE:.3g}: float64 cannot weigh the rarest class against the "
            "others (its probabilities vanish from the sums, and their squares in the "
            "split search underflow); give it a larger prior")
    return arr / arr.sum()


def check_cost(cost, n_classes):
    """The J×J cost matrix ``cost[j, i] = C(i|j)`` (rows true class, columns predicted)."""
    if cost is None:
        check_allocation(n_classes * n_classes * 8,
                         f"the default 0-1 cost matrix of {n_classes} classes (dense, "
                         f"{n_classes} x {n_classes})",
                         "fewer classes (merge rare labels) would need less")
        arr = np.ones((n_classes, n_classes))
        np.fill_diagonal(arr, 0.0)
        return arr, True
    try:
        arr = np.asarray(cost, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"cost must be a numeric array of shape ({n_classes}, {n_classes}), got {cost!r}") from exc
    if arr.shape != (n_classes, n_classes):
        raise ValueError(
            f"cost must have shape ({n_classes}, {n_classes}) (rows: true class, columns: "
            f"predicted class), got shape {arr.shape}")
    if not np.isfinite(arr).all() or np.any(arr < 0):
        raise ValueError("cost must be finite and >= 0 everywhere")
    if np.any(np.diag(arr) != 0):
        raise ValueError(f"cost must have a zero diagonal, got diagonal {np.diag(arr).tolist()}")
    if n_classes > 1 and np.any(arr.max(axis=1) <= 0):
        bad = int(np.flatnonzero(arr.max(axis=1) <= 0)[0])
        raise ValueError(
            f"cost row {bad} (true class {bad}) is all zero: every class needs a positive "
            "cost of being misclassified")
    if n_classes > 1:
        positive = arr[arr > 0]
        c_min, c_max = float(positive.min()), float(positive.max())
        if c_min < MIN_COST:
            raise ValueError(
                f"cost has a positive entry {c_min:.3g} below {MIN_COST:.3g}: risks of "
                "that size underflow float64; rescale the costs (multiply them all by a "
                "power of 10) or set it to 0")
        if c_max > c_min * MAX_COST_RANGE:
            raise ValueError(
                f"cost spans {c_min:.3g} to {c_max:.3g}, a ratio over {MAX_COST_RANGE:.3g}: "
                "float64 cannot weigh the smallest costs against the largest in the risks "
                "(they vanish from the sums, and their squares in the split search "
                "underflow); set negligible costs to 0 or compress the range")
    # 0-1 cost: a zero diagonal (checked above) and ones elsewhere
    default = bool(np.count_nonzero(arr == 1.0) == n_classes * (n_classes - 1))
    return arr, default


def check_criterion(criterion, is_classifier):
    """The kernels' integer code of ``criterion`` for a classifier or a regressor."""
    table = CLASSIFICATION_CRITERIA if is_classifier else REGRESSION_CRITERIA
    return table[check_choice(criterion, "criterion", table)]


def check_class_weight(class_weight, labels, classes, counts):
    """Priors π(j) ∝ w_j N_j for ``class_weight`` (``"balanced"`` or ``{label: w_j}``).

    ``labels`` are every label of y (a key must be one of them), ``classes`` the labels
    of the classes that take part, in order, and ``counts`` their weighted totals N_j.
    A class missing from the dict has w_j = 1. ``"balanced"`` (w_j = W / (J N_j)) gives
    equal priors, returned as ``"equal"``. Weighting every case of class j by w_j and
    keeping empirical priors would grow the same tree: π ∝ w_j N_j are its priors.
    """
    if isinstance(class_weight, str):
        check_choice(class_weight, "class_weight", ("balanced",))
        return "equal"
    if not isinstance(class_weight, dict):
        raise TypeError(
            "class_weight must be None, 'balanced' or a dict {label: weight}, got "
            f"{class_weight!r} ({_type_name(class_weight)})")
    known = set(np.asarray(labels).tolist())
    unknown = [k for k in class_weight if (k.item() if hasattr(k, "item") else k) not in known]
    if unknown:
        raise ValueError(
            f"class_weight has labels {unknown!r} that are not classes of y; the classes "
            f"are {sorted(known)!r}")
    w = np.ones(counts.shape[0])
    for key, value in class_weight.items():
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
                or not np.isfinite(value) or value <= 0:
            raise ValueError(f"class_weight[{key!r}] must be a finite number > 0, got {value!r}")
        key = key.item() if hasattr(key, "item") else key
        hit = np.flatnonzero(np.asarray([c == key for c in classes.tolist()]))
        if hit.size:  # a class that takes no part (zero weights) is ignored
            w[hit[0]] = float(value)
    priors = w * counts
    return priors / priors.sum()


def check_feature_names(X, fitted_names, estimator_name):
    """Compare the column names of X with those seen in fit (scikit-learn's rules).

    A DataFrame whose string column names differ from the fitted ones (set or order) is
    a ``ValueError``; names on one side only give a ``UserWarning``.
    """
    has_names = has_attr(X, "columns") and has_attr(X, "dtypes")
    if has_names:
        cols = list(X.columns)
        str_names = bool(cols) and all(isinstance(c, str) for c in cols)
        if fitted_names is None and str_names:
            warnings.warn(
                f"X has feature names, but {estimator_name} was fitted without "
                "feature names", UserWarning, stacklevel=user_stacklevel())
        elif fitted_names is not None and str_names and (
                len(cols) != len(fitted_names)
                or np.any(np.asarray(cols, dtype=object) != fitted_names)):
            unexpected = [c for c in cols if c not in set(fitted_names)]
            missing = [c for c in fitted_names if c not in set(cols)]
            msg = "The feature names should match those that were passed during fit.\n"
            if unexpected:
                msg += f"Feature names unseen at fit time:\n- {unexpected}\n"
            if missing:
                msg += f"Feature names seen at fit time, yet now missing:\n- {missing}\n"
            if not unexpected and not missing:
                msg += "Feature names must be in the same order as they were in fit.\n"
            raise ValueError(msg)
    elif fitted_names is not None:
        warnings.warn(
            f"X does not have valid feature names, but {estimator_name} was "
            "fitted with feature names", UserWarning, stacklevel=user_stacklevel())
