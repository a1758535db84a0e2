"""Run R's ``rpart`` through ``Rscript`` and bring its results back as pandas objects.

This is the test oracle for the parity tests (docs/maths.md §9). Nothing here imports cartjit.

Public API
----------
``have_rscript()``
    True when an ``Rscript`` executable is found (``$CARTJIT_RSCRIPT`` or ``PATH``).
``have_rpart()``
    True when ``Rscript`` is found and ``library(rpart)`` loads (result cached).
``rpart_version()``
    rpart's version string, e.g. ``"4.1.19"``.
``r_dataset(name, complete_cases=None, *, factors="str")``
    One of R's data frames (``datasets`` package, else ``rpart``; ``"pkg::name"`` also
    accepted) as a DataFrame. Doubles are written by R with 17 significant digits and
    parsed by Python's correctly rounded ``float``, so values arrive bit-exact. Integer
    columns come back as int64, factors (and characters) as strings, row names are
    dropped. ``airquality`` is reduced to its complete cases by default.
``run_rpart(df, target, features, method, parms=None, control=None, weights=None,
xval_folds=None, *, seed=None, echo_data=False, timeout=300)``
    Fit ``rpart(target ~ features, data=df, method=method, parms=parms,
    control=rpart.control(...), weights=weights)`` and return a dict (see its docstring).
``r_datasets(names, *, factors="str")``
    Several ``r_dataset`` exports in one R process, as a dict name -> DataFrame.
``run_rpart_many(jobs, *, timeout=300)``
    Several ``run_rpart`` fits (dicts of its arguments) in one R process.
``level_partition(result, node)``
    The categorical split of one rpart node decoded from ``csplit``: the levels sent to
    node 2k, those sent to node 2k+1, and those absent from the node.
``split_partition(result, row)``
    The same for any row of ``all_splits`` (a primary, competitor or surrogate split).

Exactness of the transfer. Python -> R: doubles are sent as C99 hexadecimal literals
(``float.hex``), which R's reader converts exactly (R's decimal reader is not always
correctly rounded). R -> Python: doubles are written with ``sprintf("%.17g")`` and read
with Python's ``float``; 17 significant digits identify a double uniquely. So a
threshold computed by rpart as ``(x[i] + x[i+1]) / 2`` arrives as the same double.

Errors from R (including a non-zero exit status) raise ``RuntimeError`` whose message
contains R's stderr; a run exceeding ``timeout`` seconds raises ``RuntimeError`` too.
Every call works in its own temporary directory, removed afterwards.
"""
from __future__ import annotations

import functools
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from numbers import Integral, Real
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

__all__ = [
    "have_rscript",
    "have_rpart",
    "rpart_version",
    "rscript_path",
    "r_dataset",
    "run_rpart",
    "run_rpart_many",
    "class_parms",
    "r_datasets",
    "level_partition",
    "split_partition",
    "LevelPartition",
    "RScriptError",
]

DEFAULT_TIMEOUT = 300.0

#: Name of the column that carries case weights into R (always present; ones when unweighted).
_WCOL = ".cartjit_weights"
#: Name of the column that carries fold ids into R when ``xval_folds`` is a vector.
_FCOL = ".cartjit_folds"


class RScriptError(RuntimeError):
    """Rscript failed; the message contains R's stderr."""


# --------------------------------------------------------------------------- discovery

def rscript_path() -> str | None:
    """Path of the Rscript executable: ``$CARTJIT_RSCRIPT`` if set, else the one on PATH."""
    env = os.environ.get("CARTJIT_RSCRIPT")
    if env:
        return env if (os.path.isfile(env) and os.access(env, os.X_OK)) else shutil.which(env)
    return shutil.which("Rscript")


def have_rscript() -> bool:
    """True when an Rscript executable can be found."""
    return rscript_path() is not None


@functools.lru_cache(maxsize=1)
def rpart_version() -> str | None:
    """rpart's version as a string, or None when Rscript or rpart is unavailable."""
    exe = rscript_path()
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, "--vanilla", "-e", 'cat(as.character(packageVersion("rpart")))'],
            capture_output=True, text=True, timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def have_rpart() -> bool:
    """True when Rscript runs and the rpart package loads."""
    return rpart_version() is not None


# --------------------------------------------------------------------------- R literals

def _r_string(s: str) -> str:
    # JSON string syntax (\" \\ \n \uXXXX) is valid R string syntax.
    return json.dumps(str(s), ensure_ascii=True)


def _r_name(name: str) -> str:
    return "`" + str(name).replace("\\", "\\\\").replace("`", "\\`") + "`"


def _r_double(x: float) -> str:
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    # Exact: R parses C99 hexadecimal floating constants bit for bit.
    return "(" + x.hex() + ")" if x < 0 or (x == 0 and math.copysign(1, x) < 0) else x.hex()


def _r_scalar(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, (bool, np.bool_)):
        return "TRUE" if v else "FALSE"
    if isinstance(v, Integral):
        v = int(v)
        if abs(v) < 2**31:
            return f"{v}L"
        return _r_double(float(v))
    if isinstance(v, Real):
        return _r_double(float(v))
    if isinstance(v, str):
        return _r_string(v)
    raise TypeError(f"cannot express {type(v).__name__} {v!r} as an R literal")


def _r_literal(value: Any) -> str:
    """An R expression for a Python value (None, scalars, strings, 1-d/2-d arrays, dicts)."""
    if isinstance(value, Mapping):
        items = ", ".join(f"{_r_name(k)} = {_r_literal(v)}" for k, v in value.items())
        return f"list({items})"
    if isinstance(value, (np.ndarray, list, tuple)):
        arr = np.asarray(value)
        if arr.ndim == 0:
            return _r_scalar(arr.item())
        if arr.ndim == 1:
            return "c(" + ", ".join(_r_scalar(v) for v in arr.tolist()) + ")"
        if arr.ndim == 2:
            flat = ", ".join(_r_scalar(v) for v in arr.ravel(order="C").tolist())
            # byrow=TRUE keeps M[i, j] (Python) == M[i+1, j+1] (R).
            return f"matrix(c({flat}), nrow = {arr.shape[0]}L, ncol = {arr.shape[1]}L, byrow = TRUE)"
        raise TypeError("only 1-d and 2-d arrays can be passed to R")
    return _r_scalar(value)


# --------------------------------------------------------------------------- subprocess

def _run_r(script: str, workdir: Path, timeout: float) -> subprocess.CompletedProcess:
    exe = rscript_path()
    if exe is None:
        raise RScriptError("Rscript not found; install r-base-core and r-cran-rpart")
    script_path = workdir / "script.R"
    script_path.write_text(script, encoding="utf-8")
    env = dict(os.environ)
    env.setdefault("LC_ALL", "C")  # deterministic sorting and number formatting in R
    env["LANG"] = "C"
    # R's own session temp dir goes inside ours, so nothing is left behind even when the
    # process has to be killed on timeout.
    env["TMPDIR"] = str(workdir)
    try:
        proc = subprocess.run(
            [exe, "--vanilla", str(script_path), str(workdir)],
            capture_output=True, text=True, timeout=timeout, cwd=str(workdir), env=env,
        )
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise RScriptError(f"Rscript timed out after {timeout:g} s\n--- R stderr ---\n{err}") from None
    if proc.returncode != 0:
        raise RScriptError(
            f"Rscript failed with exit status {proc.returncode}\n--- R stderr ---\n{proc.stderr}"
        )
    return proc


_INT_RE = re.compile(r"^[+-]?\d+$")


def _parse_double(s: str) -> float:
    if s in ("NA", "NaN", ""):
        return math.nan
    return float(s)  # Python's float() is correctly rounded; handles Inf/-Inf


def _read_r_csv(path: Path, string_cols: Sequence[str] = (), int_cols: Sequence[str] = (),
                float_cols: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a CSV written by our R scripts without losing a bit of any double.

    Columns named in ``string_cols`` stay strings; ``int_cols`` become int64 (float64 if
    they hold NA); every other column is parsed as float64 with Python's ``float``
    (or, when ``float_cols`` is given, only those, the rest are inferred as int or str).
    """
    raw = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    out = {}
    for col in raw.columns:
        vals = raw[col].tolist()
        if col in string_cols:
            out[col] = pd.Series(vals, dtype=object)
        elif col in int_cols or (float_cols is not None and col not in float_cols
                                 and vals and all(_INT_RE.match(v) for v in vals)):
            if any(v in ("NA", "") for v in vals):
                out[col] = pd.Series([_parse_double(v) for v in vals], dtype=np.float64)
            else:
                out[col] = pd.Series([int(v) for v in vals], dtype=np.int64)
        elif float_cols is None or col in float_cols:
            out[col] = pd.Series([_parse_double(v) for v in vals], dtype=np.float64)
        else:
            out[col] = pd.Series(vals, dtype=object)
    return pd.DataFrame(out, columns=list(raw.columns))


# --------------------------------------------------------------------------- R scripts

_R_COMMON = r"""
options(warn = 1, stringsAsFactors = FALSE)
.outdir <- commandArgs(trailingOnly = TRUE)[1]
.fmt_num <- function(x) ifelse(is.na(x) & !is.nan(x), "NA", sprintf("%.17g", x))
.write_df <- function(df, file) {
  df <- as.data.frame(df, stringsAsFactors = FALSE, optional = TRUE)
  for (nm in names(df)) {
    col <- df[[nm]]
    if (is.factor(col)) col <- as.character(col)
    if (is.double(col)) col <- .fmt_num(col)
    else if (is.integer(col) || is.logical(col)) col <- ifelse(is.na(col), "NA", as.character(as.integer(col)))
    else col <- as.character(col)
    df[[nm]] <- col
  }
  utils::write.csv(df, file.path(.outdir, file), row.names = FALSE, quote = TRUE,
                   fileEncoding = "UTF-8")
}
"""

_R_DATASET = _R_COMMON + r"""
.get_data <- function(name) {
  if (grepl("::", name, fixed = TRUE)) {
    parts <- strsplit(name, "::", fixed = TRUE)[[1]]
    e <- new.env()
    utils::data(list = parts[2], package = parts[1], envir = e)
    return(get(parts[2], envir = e))
  }
  for (pkg in c("datasets", "rpart")) {
    e <- new.env()
    ok <- suppressWarnings(tryCatch({
      utils::data(list = name, package = pkg, envir = e); exists(name, envir = e, inherits = FALSE)
    }, error = function(err) FALSE))
    if (isTRUE(ok)) return(get(name, envir = e))
  }
  stop(sprintf("data set '%s' not found in packages datasets or rpart", name))
}
source(file.path(.outdir, "params.R"))
d <- .get_data(.name)
if (!is.data.frame(d)) d <- as.data.frame(d)
if (.complete_cases) d <- d[stats::complete.cases(d), , drop = FALSE]
rownames(d) <- NULL
types <- vapply(d, function(col) {
  if (is.factor(col) || is.character(col)) "str"
  else if (is.integer(col)) "int"
  else if (is.logical(col)) "int"
  else if (is.double(col)) "num"
  else stop("unsupported column type: ", class(col)[1])
}, character(1))
.write_df(data.frame(column = names(d), type = unname(types)), "types.csv")
# the levels of every factor column in R's order, and whether the factor is ordered
.lv <- data.frame(column = character(0), level = character(0), ordered = integer(0))
for (nm in names(d)) if (is.factor(d[[nm]])) {
  .lv <- rbind(.lv, data.frame(column = nm, level = levels(d[[nm]]),
                               ordered = as.integer(is.ordered(d[[nm]]))))
}
.write_df(.lv, "levels.csv")
.write_df(d, "data.csv")
"""

_R_RPART = _R_COMMON + r"""
suppressPackageStartupMessages(library(rpart))
.bq <- function(s) paste0("`", gsub("`", "\\`", s, fixed = TRUE), "`")
source(file.path(.outdir, "params.R"))
raw <- utils::read.csv(file.path(.outdir, "data.csv"), colClasses = "character",
                       na.strings = character(0), check.names = FALSE,
                       fileEncoding = "UTF-8")
.decode <- function(v, type) {
  v[v == "NA"] <- NA
  switch(type,
         num = as.numeric(v),      # C99 hex literals: exact
         int = as.integer(v),
         str = v,
         stop("unknown column type ", type))
}
d <- data.frame(row.names = seq_len(nrow(raw)))
for (nm in names(raw)) d[[nm]] <- .decode(raw[[nm]], .col_types[[nm]])
for (nm in names(.factor_levels)) d[[nm]] <- factor(d[[nm]], levels = .factor_levels[[nm]],
                                                     ordered = nm %in% .ordered_factors)

if (.echo) .write_df(d[, c(.target, .features), drop = FALSE], "echo.csv")

.fml <- stats::as.formula(paste(.bq(.target), "~", paste(vapply(.features, .bq, ""), collapse = " + ")))
environment(.fml) <- globalenv()
.ctrl <- .control
if (is.null(.ctrl$xval)) .ctrl$xval <- 0L
if (.fold_vector) .ctrl$xval <- d[[.FCOL]]
.ctrl <- do.call(rpart.control, .ctrl)
if (!is.null(.seed)) set.seed(.seed)
.args <- list(formula = .fml, data = quote(d), weights = as.name(.WCOL),
              method = .method, control = .ctrl)
if (!is.null(.parms)) .args$parms <- .parms
fit <- do.call("rpart", .args)

fr <- fit$frame
nodes <- as.numeric(rownames(fr))
vars <- as.character(fr$var)
internal <- vars != "<leaf>"
.write_df(data.frame(node = nodes, var = vars, n = fr$n, wt = fr$wt, dev = fr$dev,
                     yval = fr$yval, complexity = fr$complexity,
                     ncompete = fr$ncompete, nsurrogate = fr$nsurrogate), "frame.csv")

# fit$splits: for each internal node in frame order, the primary split, then its
# competitors (ncompete rows), then its surrogates (nsurrogate rows).
sp <- fit$splits
if (any(internal)) {
  nrows <- 1L + fr$ncompete[internal] + fr$nsurrogate[internal]
  start <- cumsum(c(1L, nrows))[seq_along(nrows)]
  if (is.null(sp) || nrow(sp) != sum(nrows)) stop("unexpected layout of fit$splits")
  kind <- character(0); owner <- numeric(0)
  inodes <- nodes[internal]
  for (i in seq_along(nrows)) {
    kind <- c(kind, "primary", rep("competitor", fr$ncompete[internal][i]),
              rep("surrogate", fr$nsurrogate[internal][i]))
    owner <- c(owner, rep(inodes[i], nrows[i]))
  }
  allsp <- data.frame(node = owner, kind = kind, var = rownames(sp),
                      count = sp[, "count"], ncat = sp[, "ncat"], improve = sp[, "improve"],
                      index = sp[, "index"], adj = sp[, "adj"])
  prim <- allsp[start, , drop = FALSE]
  if (!all(prim$var == vars[internal])) stop("primary split rows do not match fit$frame$var")
  left_n <- fr$n[match(2 * inodes, nodes)]
  right_n <- fr$n[match(2 * inodes + 1, nodes)]
  .write_df(data.frame(node = prim$node, var = prim$var, threshold = prim$index,
                       ncat = prim$ncat, n = fr$n[internal], wt = fr$wt[internal],
                       count = prim$count, improve = prim$improve,
                       left_n = left_n, right_n = right_n), "splits.csv")
  .write_df(allsp, "all_splits.csv")
} else {
  .write_df(data.frame(node = numeric(0), var = character(0), threshold = numeric(0),
                       ncat = numeric(0), n = numeric(0), wt = numeric(0), count = numeric(0),
                       improve = numeric(0), left_n = numeric(0), right_n = numeric(0)), "splits.csv")
  .write_df(data.frame(node = numeric(0), kind = character(0), var = character(0),
                       count = numeric(0), ncat = numeric(0), improve = numeric(0),
                       index = numeric(0), adj = numeric(0)), "all_splits.csv")
}
if (!is.null(fit$csplit)) .write_df(as.data.frame(fit$csplit), "csplit.csv")
.vi <- fit$variable.importance
.write_df(data.frame(var = if (is.null(.vi)) character(0) else names(.vi),
                     importance = if (is.null(.vi)) numeric(0) else unname(.vi)),
          "importance.csv")

cp <- as.data.frame(fit$cptable)
names(cp) <- gsub(" ", "_", names(cp), fixed = TRUE)
.write_df(cp, "cptable.csv")

if (!is.null(fr$yval2)) {
  y2 <- as.matrix(fr$yval2)
  J <- (ncol(y2) - 2L) %/% 2L
  colnames(y2) <- c("yval", paste0("count_", seq_len(J)), paste0("prob_", seq_len(J)), "nodeprob")
  .write_df(cbind(data.frame(node = nodes), as.data.frame(y2)), "yval2.csv")
}
.write_df(data.frame(node = nodes[fit$where]), "where.csv")
if (.xpred) {
  # rpart's own cross-validated predictions with the same folds, at +Inf for the first
  # row of the CP table and at the geometric mean of consecutive CPs for the others
  .cps <- fit$cptable[, "CP"]
  .pts <- c(Inf, sqrt(.cps[-1L] * .cps[-length(.cps)]))
  .xv <- if (.fold_vector) d[[.FCOL]] else .ctrl$xval
  if (!is.null(.seed)) set.seed(.seed)
  .xp <- xpred.rpart(fit, xval = .xv, cp = .pts)
  .xp <- matrix(as.numeric(.xp), nrow = nrow(d))
  colnames(.xp) <- paste0("p", seq_len(ncol(.xp)))
  .write_df(as.data.frame(.xp), "xpred.csv")
}
if (.fold_fits) {
  # after xpred.rpart: with rpart 4.1.19, other rpart fits run between the main fit
  # and xpred.rpart made xpred.rpart return garbage (values like 1e+257)
  # rpart fitted separately on the training part of every fold (xval = 0)
  .c0 <- .control
  .c0$xval <- 0L
  .c0 <- do.call(rpart.control, .c0)
  for (.v in sort(unique(d[[.FCOL]]))) {
    .a <- .args
    .a$data <- d[d[[.FCOL]] != .v, , drop = FALSE]
    .a$control <- .c0
    .f <- do.call("rpart", .a)
    .fr <- .f$frame
    .nd <- as.numeric(rownames(.fr))
    .vs <- as.character(.fr$var)
    .in <- .vs != "<leaf>"
    .pre <- paste0("fold", .v, "_")
    .write_df(data.frame(node = .nd, var = .vs, n = .fr$n, wt = .fr$wt, dev = .fr$dev,
                         yval = .fr$yval, complexity = .fr$complexity),
              paste0(.pre, "frame.csv"))
    # primary splits: the first row of each internal node's block in .f$splits
    .nr <- 1L + .fr$ncompete[.in] + .fr$nsurrogate[.in]
    .st <- cumsum(c(1L, .nr))[seq_along(.nr)]
    .sp <- .f$splits
    .write_df(data.frame(node = .nd[.in], var = if (any(.in)) rownames(.sp)[.st] else character(0),
                         threshold = if (any(.in)) .sp[.st, "index"] else numeric(0),
                         ncat = if (any(.in)) .sp[.st, "ncat"] else numeric(0)),
              paste0(.pre, "splits.csv"))
    .write_df(data.frame(node = .nd[.f$where]), paste0(.pre, "where.csv"))
  }
}
.write_df(data.frame(level = if (is.null(attr(fit, "ylevels"))) character(0) else attr(fit, "ylevels")),
          "ylevels.csv")
if (file.exists(file.path(.outdir, "newdata.csv"))) {
  # predict() on new data (NA kept: na.pass, as predict.rpart does), and the node each
  # row ends in: rpart:::pred.rpart gives the row of fit$frame (an internal node when
  # neither the split nor a surrogate nor the majority sends the case on)
  .rawn <- utils::read.csv(file.path(.outdir, "newdata.csv"), colClasses = "character",
                           na.strings = character(0), check.names = FALSE,
                           fileEncoding = "UTF-8")
  .nd <- data.frame(row.names = seq_len(nrow(.rawn)))
  for (nm in names(.rawn)) .nd[[nm]] <- .decode(.rawn[[nm]], .new_types[[nm]])
  for (nm in intersect(names(.factor_levels), names(.nd)))
    .nd[[nm]] <- factor(.nd[[nm]], levels = .factor_levels[[nm]],
                        ordered = nm %in% .ordered_factors)
  .mf <- stats::model.frame(stats::delete.response(fit$terms), .nd, na.action = stats::na.pass,
                            xlev = attr(fit, "xlevels"))
  .wh <- if (nrow(fr) == 1L) rep(1L, nrow(.nd)) else rpart:::pred.rpart(fit, rpart:::rpart.matrix(.mf))
  .write_df(data.frame(node = nodes[.wh]), "newdata_node.csv")
  .pr <- predict(fit, .nd)
  if (is.matrix(.pr)) {
    .pr <- as.data.frame(unclass(.pr))
    names(.pr) <- paste0("prob_", seq_len(ncol(.pr)))
  } else .pr <- data.frame(pred = as.numeric(.pr))
  .write_df(.pr, "newdata_pred.csv")
}
"""

# Several jobs in one R process: every job directory (job00000, ...) holds its params.R
# (and data.csv); the job script runs in a fresh environment per job, with commandArgs()
# naming that directory.
# An error stops only its own job (error.txt), the others still run.
_R_MANY = r"""
.root <- commandArgs(trailingOnly = TRUE)[1]
for (.job in sort(list.dirs(.root, full.names = TRUE, recursive = FALSE))) {
  if (!grepl("^job[0-9]{5}$", basename(.job))) next
  .err <- tryCatch({
    local({
      commandArgs <- function(trailingOnly = FALSE) .job
      source(file.path(.root, "job.R"), local = TRUE)
    })
    NULL
  }, error = function(e) conditionMessage(e))
  if (!is.null(.err)) writeLines(.err, file.path(.job, "error.txt"))
}
"""


# --------------------------------------------------------------------------- public API

def r_dataset(name: str, complete_cases: bool | None = None, *, factors: str = "str",
              timeout: float = DEFAULT_TIMEOUT) -> pd.DataFrame:
    """Export one of R's data frames (``datasets``, then ``rpart``; or ``"pkg::name"``).

    Doubles arrive bit-exact (17 significant digits), integers as int64, factors and
    characters as Python strings; row names are dropped. ``complete_cases`` keeps only
    the rows without NA (default: True for ``airquality``, False otherwise). A contingency
    table (``HairEyeColor``, ``Titanic``, ...) arrives as R's ``as.data.frame`` makes it:
    one row per cell, its count in ``Freq``.

    ``factors="category"`` returns R's factors as pandas categoricals instead, with R's
    levels in R's order (unused levels included) and ``ordered=True`` for R's ordered
    factors; ``"str"`` (the default) returns them as strings.
    """
    with tempfile.TemporaryDirectory(prefix="cartjit-rpart-") as tmp:
        work = Path(tmp)
        read = _write_dataset_job(work, name, complete_cases, factors)
        _run_r(_R_DATASET, work, timeout)
        return read()


def r_datasets(names: Sequence[str], *, factors: str = "str",
               timeout: float = DEFAULT_TIMEOUT) -> dict[str, pd.DataFrame]:
    """Several :func:`r_dataset` exports (default ``complete_cases``) in one R process."""
    names = list(names)
    with tempfile.TemporaryDirectory(prefix="cartjit-rpart-") as tmp:
        work = Path(tmp)
        readers = []
        for i, name in enumerate(names):
            sub = work / f"job{i:05d}"
            sub.mkdir()
            readers.append((sub, _write_dataset_job(sub, name, None, factors)))
        _run_many(_R_DATASET, work, timeout)
        return {name: read() for name, (sub, read) in zip(names, _checked(readers))}


def _write_dataset_job(work: Path, name: str, complete_cases: bool | None, factors: str):
    """Write the params.R of one export into ``work``; return the function that reads
    the data frame once R has run there."""
    if factors not in ("str", "category"):
        raise ValueError(f"factors must be 'str' or 'category', got {factors!r}")
    if complete_cases is None:
        complete_cases = name.split("::")[-1] == "airquality"
    (work / "params.R").write_text(
        f".name <- {_r_string(name)}\n.complete_cases <- {'TRUE' if complete_cases else 'FALSE'}\n",
        encoding="utf-8",
    )

    def read() -> pd.DataFrame:
        types = pd.read_csv(work / "types.csv", dtype=str, keep_default_na=False)
        type_of = dict(zip(types["column"], types["type"]))
        strs = [c for c, t in type_of.items() if t == "str"]
        ints = [c for c, t in type_of.items() if t == "int"]
        out = _read_r_csv(work / "data.csv", string_cols=strs, int_cols=ints)
        if factors == "category":
            lv = pd.read_csv(work / "levels.csv", dtype=str, keep_default_na=False)
            for col, rows in lv.groupby("column", sort=False):
                out[col] = pd.Categorical(out[col], categories=rows["level"].tolist(),
                                          ordered=rows["ordered"].iloc[0] == "1")
        return out

    return read


def _run_many(script: str, work: Path, timeout: float) -> None:
    """Run ``script`` once per job directory under ``work``, in one R process."""
    (work / "job.R").write_text(script, encoding="utf-8")
    if any(work.glob("job?????")):
        _run_r(_R_MANY, work, timeout)


def _checked(readers):
    """The (directory, reader) pairs, after raising the first job's R error if any."""
    for i, (sub, _) in enumerate(readers):
        err = sub / "error.txt"
        if err.exists():
            raise RScriptError(f"R job {i} failed\n--- R error ---\n"
                               + err.read_text(encoding="utf-8"))
    return readers


def _encode_column(s: pd.Series) -> tuple[list[str], str]:
    """Text for one data column and its R type ('num', 'int' or 'str')."""
    if pd.api.types.is_bool_dtype(s):
        return [("NA" if pd.isna(v) else str(int(v))) for v in s], "int"
    if pd.api.types.is_integer_dtype(s):
        vals = s.tolist()
        if all(pd.isna(v) or abs(int(v)) < 2**31 for v in vals):
            return [("NA" if pd.isna(v) else str(int(v))) for v in vals], "int"
        return [("NA" if pd.isna(v) else float(v).hex()) for v in vals], "num"
    if pd.api.types.is_numeric_dtype(s):
        out = []
        for v in s.tolist():
            v = float(v)
            if math.isnan(v):
                out.append("NA")
            elif math.isinf(v):
                out.append("Inf" if v > 0 else "-Inf")
            else:
                out.append(v.hex())
        return out, "num"
    return [("NA" if (v is None or (isinstance(v, float) and math.isnan(v))) else str(v))
            for v in s.tolist()], "str"


def class_parms(criterion: str, priors: Sequence[float] | None,
                loss: Sequence[Sequence[float]] | np.ndarray | None) -> dict[str, Any] | None:
    """rpart's ``parms`` for a classification tree grown as cartjit grows it with
    ``criterion``, ``priors`` and ``cost=loss`` (``None`` when rpart's defaults do).

    ``"entropy"`` is rpart's ``split = "information"``. rpart's ``L[i, j]`` is the loss of
    predicting class j for a case of true class i; cartjit's ``cost[j, i]`` = C(i|j) has
    the true class in its rows too: the matrix goes over without a transpose.
    """
    parms: dict[str, Any] = {}
    if criterion == "entropy":
        parms["split"] = "information"
    if priors is not None:
        parms["prior"] = list(priors)
    if loss is not None:
        parms["loss"] = np.array(loss, dtype=np.float64)
    return parms or None


def run_rpart(
    df: pd.DataFrame,
    target: str,
    features: Sequence[str],
    method: str,
    parms: Mapping[str, Any] | None = None,
    control: Mapping[str, Any] | None = None,
    weights: Sequence[float] | np.ndarray | None = None,
    xval_folds: int | Sequence[int] | np.ndarray | None = None,
    *,
    seed: int | None = None,
    class_levels: Sequence[Any] | None = None,
    echo_data: bool = False,
    xpred: bool = False,
    fold_fits: bool = False,
    newdata: pd.DataFrame | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[str, Any]:
    """Fit ``rpart(target ~ f1 + f2 + ..., data=df, method=method, ...)`` in R.

    Parameters
    ----------
    df, target, features
        The data; only ``target`` and ``features`` are sent to R.
    method
        ``"class"``, ``"anova"``, ``"poisson"``, ...
    parms
        rpart's ``parms`` list, e.g. ``{"split": "information"}``,
        ``{"prior": [0.5, 0.5]}``, ``{"loss": L}`` with ``L`` a J×J array; a 2-d array
        keeps its orientation (``L[i, j]`` in Python is ``L[i+1, j+1]`` in R, and rpart
        reads ``L[true class, predicted class]``).
    control
        Arguments of ``rpart.control`` (``cp``, ``minsplit``, ``minbucket``,
        ``maxcompete``, ``maxsurrogate``, ``maxdepth``, ``xval``, ...). ``xval``
        defaults to 0 here (no cross-validation) unless given here or in ``xval_folds``.
    weights
        Case weights (``weights=`` of rpart); default all ones. They are always passed,
        which keeps rows whose features are all missing: rpart's ``na.rpart`` drops such
        a row only when the model frame has no other column (no ``weights=``), so
        ``rpart(y ~ ., d)`` without weights would drop it. Rows with a missing response
        are dropped by rpart either way.
    xval_folds
        ``xval`` of rpart: an integer V (random folds; pass ``seed``) or a vector of
        fold ids, one per row (rpart's ``xval`` accepts group ids).
    seed
        ``set.seed(seed)`` before fitting (only matters for random folds).
    class_levels
        For ``method="class"``: the order of the factor levels of the target. Default:
        the sorted unique labels (``np.unique`` order, as cartjit's ``classes_``).
        A feature column of pandas ``category`` dtype becomes a factor with the
        categories as its levels, in their order (ordered when the categorical is); other
        string columns become factors with their sorted values as levels.
    echo_data
        Also return the data as R decoded it (``result["data"]``), to check transfer.
    xpred
        Also return rpart's own cross-validated predictions (``xpred.rpart`` with the
        folds of ``xval_folds``) for every row of the CP table: at +Inf for the first
        row and at the geometric mean of consecutive CPs for the others.
    fold_fits
        Also fit rpart (same settings, ``xval = 0``) on the training part of every fold
        of ``xval_folds`` (a vector), in the same R session.
    newdata
        Rows to predict (a data frame holding at least the ``features`` columns; NaN or
        None = NA, also in factor columns, whose levels are those sent with ``df``; a
        value that is not one of those levels becomes NA too). rpart predicts them with
        ``predict(fit, newdata)`` (missing values passed on: surrogates, then the
        majority, as the fit's ``usesurrogate`` says).

    Returns
    -------
    dict with
        ``"splits"``: one row per internal node (primary split): ``node`` (rpart node
        number; children of k are 2k and 2k+1), ``var``, ``threshold`` (the ``index``
        column of ``fit$splits``), ``ncat`` (-1: ``x < threshold`` goes to node 2k;
        +1: ``x >= threshold`` goes to node 2k; >1: categorical, ``threshold`` is a
        row of ``csplit``), ``n``, ``wt``, ``count``, ``improve``, ``left_n``
        (n of node 2k), ``right_n`` (n of node 2k+1).
        ``"all_splits"``: every row of ``fit$splits`` with ``node`` and ``kind``
        (primary / competitor / surrogate).
        ``"frame"``: ``fit$frame`` (node, var, n, wt, dev, yval, complexity, ncompete,
        nsurrogate); leaves have ``var == "<leaf>"``.
        ``"cptable"``: ``fit$cptable`` (CP, nsplit, rel_error[, xerror, xstd]).
        ``"yval2"``: classification only, ``fit$frame$yval2`` with ``node`` (yval,
        count_1..J, prob_1..J, nodeprob); None otherwise.
        ``"where"``: int64 array, the node number of the leaf each row falls in.
        ``"ylevels"``: list of class labels (as strings) for classification.
        ``"csplit"``: ``fit$csplit`` as a DataFrame, or None (decode a categorical
        split with :func:`level_partition`).
        ``"variable_importance"``: ``fit$variable.importance`` as a float Series indexed
        by variable name, largest first (rpart leaves out variables of importance 0;
        empty when the tree has no split).
        ``"factor_levels"``: the levels of every factor among ``features`` in R's order
        (column j of ``csplit`` is level j); ``"ordered_factors"``: those sent as ordered
        factors (pandas categoricals with ``ordered=True``), which rpart splits as
        ordered variables on their level numbers (``threshold`` is then between 1-based
        level numbers).
        ``"data"``: the decoded data when ``echo_data`` (else absent).
        ``"xpred"``: when ``xpred``, a float array (n, rows of the CP table): the
        predicted class (1-based, as ``yval``) or response of each case at each row.
        ``"fold_fits"``: when ``fold_fits``, a dict fold id -> dict with ``"frame"``
        (node, var, n, wt, dev, yval, complexity), ``"splits"`` (node, var, threshold,
        ncat: primary splits, as above) and ``"where"`` of that fold's separate fit.
        ``"newdata_node"``: when ``newdata`` is given, an int64 array: the rpart node
        number each row ends in (``rpart:::pred.rpart``; an internal node when the row
        stops there, e.g. with ``usesurrogate`` < 2); ``"newdata_pred"``: a float array,
        ``predict(fit, newdata)``: (m, J) class probabilities for ``"class"`` (columns
        in ``ylevels`` order), (m,) fitted values otherwise.

        Reading ``all_splits`` (rpart's ``fit$splits``, one block per internal node in
        ``frame`` order: the primary split, ``ncompete`` competitors, ``nsurrogate``
        surrogates): ``count`` is the number of cases with the variable present for a
        primary or competitor split and the number of cases the surrogate sent down for
        a surrogate; ``improve`` is the improvement for primary and competitor rows and
        the agreement (a fraction) for surrogate rows; ``adj`` the adjusted agreement of
        a surrogate (0 otherwise). For an ordered variable ``index`` is the threshold and
        ``ncat`` is -1 when ``x < index`` goes to node 2k, +1 when it goes to 2k+1;
        for a factor ``ncat`` is its number of levels and ``index`` a 1-based row of
        ``csplit`` (decode it with :func:`split_partition`).
    """
    with tempfile.TemporaryDirectory(prefix="cartjit-rpart-") as tmp:
        work = Path(tmp)
        read = _write_job(work, df, target, features, method, parms, control, weights,
                          xval_folds, seed=seed, class_levels=class_levels,
                          echo_data=echo_data, xpred=xpred, fold_fits=fold_fits,
                          newdata=newdata)
        _run_r(_R_RPART, work, timeout)
        return read()


def run_rpart_many(jobs: Sequence[Mapping[str, Any]], *,
                   timeout: float = DEFAULT_TIMEOUT) -> list[dict[str, Any]]:
    """Several :func:`run_rpart` fits in one R process (R starts once, which is most of
    the cost of a small fit). Each job is a dict of :func:`run_rpart`'s arguments
    (``timeout`` excepted); the results come back in the order of ``jobs``. An error in
    one fit raises :class:`RScriptError` naming the job and carrying R's message."""
    jobs = list(jobs)
    with tempfile.TemporaryDirectory(prefix="cartjit-rpart-") as tmp:
        work = Path(tmp)
        readers = []
        for i, job in enumerate(jobs):
            job = dict(job)
            if "timeout" in job:
                raise ValueError("give the timeout of run_rpart_many, not one per job")
            sub = work / f"job{i:05d}"
            sub.mkdir()
            readers.append((sub, _write_job(sub, **job)))
        _run_many(_R_RPART, work, timeout)
        return [read() for _, read in _checked(readers)]


def _write_job(work: Path, df: pd.DataFrame, target: str, features: Sequence[str],
               method: str, parms=None, control=None, weights=None, xval_folds=None, *,
               seed=None, class_levels=None, echo_data=False, xpred=False,
               fold_fits=False, newdata=None):
    """Check the arguments of one fit, write its params.R and data.csv into ``work`` and
    return the function that reads its results once R has run there."""
    features = list(features)
    if not features:
        raise ValueError("features must not be empty")
    if xpred and xval_folds is None:
        raise ValueError("xpred needs xval_folds")
    if fold_fits and (xval_folds is None or np.ndim(xval_folds) == 0):
        raise ValueError("fold_fits needs xval_folds as a vector of fold ids")
    for col in [target, *features]:
        if col not in df.columns:
            raise KeyError(f"column {col!r} not in the data frame")
        if col in (_WCOL, _FCOL):
            raise ValueError(f"column name {col!r} is reserved")
    if len(set(features)) != len(features) or target in features:
        raise ValueError("features must be distinct and must not include the target")
    n = len(df)

    cols: dict[str, list[str]] = {}
    types: dict[str, str] = {}
    factor_levels: dict[str, list[str]] = {}
    ordered_factors: list[str] = []
    for col in [target, *features]:
        s = df[col]
        if col == target and method == "class":
            labels = s.to_numpy()
            if pd.isna(s).any():
                raise ValueError("the target must not have missing values")
            levels = list(class_levels) if class_levels is not None else list(np.unique(labels))
            cols[col] = [str(v) for v in labels]
            types[col] = "str"
            factor_levels[col] = [str(v) for v in levels]
            continue
        text, typ = _encode_column(s)
        cols[col], types[col] = text, typ
        if typ == "str":
            if isinstance(s.dtype, pd.CategoricalDtype):
                levels = [str(v) for v in s.cat.categories]
                if s.cat.ordered:
                    ordered_factors.append(col)
            else:
                levels = sorted({v for v in text if v != "NA"})
            factor_levels[col] = levels

    new_cols: dict[str, list[str]] = {}
    new_types: dict[str, str] = {}
    if newdata is not None:
        if not isinstance(newdata, pd.DataFrame):
            raise TypeError(f"newdata must be a pandas DataFrame, got {type(newdata).__name__}")
        if len(newdata) == 0:
            raise ValueError("newdata must have at least one row")
        for col in features:
            if col not in newdata.columns:
                raise KeyError(f"column {col!r} not in newdata")
            text, typ = _encode_column(newdata[col])
            if (typ == "str") != (types[col] == "str"):
                raise ValueError(f"column {col!r} of newdata is {'not ' if typ != 'str' else ''}"
                                 "a factor column but the training column is"
                                 f"{' not' if types[col] != 'str' else ''}")
            new_cols[col], new_types[col] = text, typ

    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"weights must have shape ({n},), got {w.shape}")
    cols[_WCOL], types[_WCOL] = [float(v).hex() for v in w], "num"

    fold_vector = False
    ctrl = dict(control or {})
    if xval_folds is not None:
        if np.ndim(xval_folds) == 0:
            ctrl["xval"] = int(xval_folds)
        else:
            folds = np.asarray(xval_folds)
            if folds.shape != (n,):
                raise ValueError(f"xval_folds must be an int or have shape ({n},)")
            cols[_FCOL], types[_FCOL] = [str(int(v)) for v in folds], "int"
            ctrl.pop("xval", None)
            fold_vector = True

    params = [
        f".target <- {_r_string(target)}",
        f".features <- {_r_literal(features)}",
        f".method <- {_r_string(method)}",
        f".parms <- {_r_literal(dict(parms)) if parms is not None else 'NULL'}",
        f".control <- {_r_literal(ctrl) if ctrl else 'list()'}",
        f".col_types <- {_r_literal(types)}",
        f".factor_levels <- {_r_literal({k: list(v) for k, v in factor_levels.items()}) if factor_levels else 'list()'}",
        f".ordered_factors <- {_r_literal(ordered_factors) if ordered_factors else 'character(0)'}",
        f".fold_vector <- {'TRUE' if fold_vector else 'FALSE'}",
        f".seed <- {_r_scalar(int(seed)) if seed is not None else 'NULL'}",
        f".echo <- {'TRUE' if echo_data else 'FALSE'}",
        f".xpred <- {'TRUE' if xpred else 'FALSE'}",
        f".fold_fits <- {'TRUE' if fold_fits else 'FALSE'}",
        f".new_types <- {_r_literal(new_types) if new_types else 'list()'}",
        f".WCOL <- {_r_string(_WCOL)}",
        f".FCOL <- {_r_string(_FCOL)}",
    ]
    (work / "params.R").write_text("\n".join(params) + "\n", encoding="utf-8")
    pd.DataFrame(cols, columns=list(cols)).to_csv(work / "data.csv", index=False)
    if newdata is not None:
        pd.DataFrame(new_cols, columns=list(new_cols)).to_csv(work / "newdata.csv", index=False)

    def read() -> dict[str, Any]:
        frame = _read_r_csv(work / "frame.csv", string_cols=["var"],
                            int_cols=["node", "n", "ncompete", "nsurrogate"])
        splits = _read_r_csv(work / "splits.csv", string_cols=["var"],
                             int_cols=["node", "ncat", "n", "count", "left_n", "right_n"])
        all_splits = _read_r_csv(work / "all_splits.csv", string_cols=["var", "kind"],
                                 int_cols=["node", "ncat", "count"])
        cptable = _read_r_csv(work / "cptable.csv", int_cols=["nsplit"])
        yval2 = None
        if (work / "yval2.csv").exists():
            y2 = pd.read_csv(work / "yval2.csv", dtype=str, nrows=0)
            counts = [c for c in y2.columns if c.startswith("count_")]
            yval2 = _read_r_csv(work / "yval2.csv", int_cols=["node", "yval"],
                                float_cols=[*counts, *[c for c in y2.columns if c.startswith("prob_")],
                                            "nodeprob"])
        where = _read_r_csv(work / "where.csv", int_cols=["node"])["node"].to_numpy()
        ylevels = pd.read_csv(work / "ylevels.csv", dtype=str, keep_default_na=False)["level"].tolist()
        csplit = None
        if (work / "csplit.csv").exists():
            csplit = _read_r_csv(work / "csplit.csv", float_cols=[])
        imp = _read_r_csv(work / "importance.csv", string_cols=["var"],
                          float_cols=["importance"])
        importance = pd.Series(imp["importance"].to_numpy(dtype=np.float64),
                               index=pd.Index(imp["var"].tolist(), dtype=object),
                               name="variable_importance")
        result: dict[str, Any] = {
            "splits": splits,
            "all_splits": all_splits,
            "frame": frame,
            "cptable": cptable,
            "yval2": yval2,
            "where": where,
            "ylevels": ylevels,
            "csplit": csplit,
            "variable_importance": importance,
            "factor_levels": {c: list(v) for c, v in factor_levels.items()
                              if c != target or method != "class"},
            "ordered_factors": list(ordered_factors),
        }
        if fold_fits:
            result["fold_fits"] = {}
            for v in sorted({int(u) for u in np.asarray(xval_folds)}):
                pre = f"fold{v}_"
                result["fold_fits"][v] = {
                    "frame": _read_r_csv(work / f"{pre}frame.csv", string_cols=["var"],
                                         int_cols=["node", "n"]),
                    "splits": _read_r_csv(work / f"{pre}splits.csv", string_cols=["var"],
                                          int_cols=["node", "ncat"]),
                    "where": _read_r_csv(work / f"{pre}where.csv",
                                         int_cols=["node"])["node"].to_numpy(),
                }
        if xpred:
            result["xpred"] = _read_r_csv(work / "xpred.csv").to_numpy(dtype=np.float64)
        if newdata is not None:
            result["newdata_node"] = _read_r_csv(work / "newdata_node.csv",
                                                 int_cols=["node"])["node"].to_numpy()
            pred = _read_r_csv(work / "newdata_pred.csv").to_numpy(dtype=np.float64)
            result["newdata_pred"] = pred if method == "class" else pred[:, 0]
        if echo_data:
            strs = [c for c in [target, *features] if types[c] == "str"]
            ints = [c for c in [target, *features] if types[c] == "int"]
            result["data"] = _read_r_csv(work / "echo.csv", string_cols=strs, int_cols=ints)
        return result

    return read


class LevelPartition(NamedTuple):
    """An rpart split of a factor: level names by destination, in R's level order."""

    var: str
    to_first: tuple[str, ...]    # levels sent to node 2k (csplit code 1)
    to_second: tuple[str, ...]   # levels sent to node 2k+1 (csplit code 3)
    absent: tuple[str, ...]      # levels without a case of positive weight at the node (2)


def level_partition(result: Mapping[str, Any], node: int) -> LevelPartition:
    """Decode the primary split of rpart node ``node`` when it splits a factor.

    rpart stores a split of an unordered factor with L levels as ``ncat = L`` and, in
    ``index``, a 1-based row of ``csplit``; column j of that row is 1 when level j goes to
    the left child (node 2k), 3 when it goes to the right child (2k+1) and 2 when no case
    of the node has that level. Raises ``ValueError`` when the node does not split a factor.
    """
    splits = result["splits"].set_index("node")
    if node not in splits.index:
        raise ValueError(f"node {node} is not an internal node of this rpart tree")
    row = splits.loc[node]
    var, ncat = str(row["var"]), int(row["ncat"])
    if ncat < 2:
        raise ValueError(f"node {node} splits {var!r} as an ordered variable (ncat={ncat})")
    return _decode_csplit(result, var, ncat, float(row["threshold"]), f"node {node}")


def split_partition(result: Mapping[str, Any], row: int) -> LevelPartition:
    """Decode row ``row`` (0-based position) of ``result["all_splits"]`` when it splits a
    factor: a primary, competitor or surrogate split, coded as for
    :func:`level_partition` (for a surrogate, 2 also marks a level that no case with the
    primary variable present has at the node: the surrogate cannot send it anywhere).
    Raises ``ValueError`` when the row splits an ordered variable."""
    all_splits = result["all_splits"]
    if not 0 <= row < len(all_splits):
        raise ValueError(f"row {row} is not a row of all_splits (it has {len(all_splits)})")
    sp = all_splits.iloc[row]
    var, ncat = str(sp["var"]), int(sp["ncat"])
    if ncat < 2:
        raise ValueError(f"row {row} splits {var!r} as an ordered variable (ncat={ncat})")
    return _decode_csplit(result, var, ncat, float(sp["index"]),
                          f"row {row} (node {int(sp['node'])}, {sp['kind']})")


def _decode_csplit(result: Mapping[str, Any], var: str, ncat: int, index: float,
                   where: str) -> LevelPartition:
    levels = result["factor_levels"].get(var)
    if levels is None or len(levels) != ncat:
        raise ValueError(f"variable {var!r} of {where} is not a factor with {ncat} levels")
    codes = result["csplit"].iloc[int(round(index)) - 1].to_numpy()[:ncat]
    groups: dict[int, list[str]] = {1: [], 2: [], 3: []}
    for level, code in zip(levels, codes):
        if int(code) not in groups:
            raise ValueError(f"unexpected csplit code {code!r} at {where}")
        groups[int(code)].append(level)
    return LevelPartition(var, tuple(groups[1]), tuple(groups[3]), tuple(groups[2]))
