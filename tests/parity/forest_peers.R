# The R peers of cartjit's forests on every train/test split of one dataset, in one process.
#
# Run by tests/parity/forest_runner.py (run_r_peers), which writes into the work directory
# (the script's first argument):
#   params.R    .columns (every column, in order), .target, .task ("class" or "reg"),
#               .char_target (the target when it holds class labels), .levels (factor
#               columns -> levels), .classes (class labels), .ntree, .mtry, .seed, .peers
#   data.csv    the data set, factors as their labels, missing values as NA
#   splits.csv  one column per split: 1 for a training case, 0 for a test case
#   fills.csv   (when the data have missing values) split, column, value: the value that
#               replaces a missing value of that column in that split (the training
#               sample's median, or its most frequent level), for the peers that cannot
#               take missing values
# and reads back results.csv: split, method, test_error, oob_error (misclassification
# rate, or mean squared error for regression).
#
# Peers: "randomForest" (nodesize 1), "ranger" (min.node.size 1, every unordered factor
# split over all its two-group partitions) on the filled-in data; "ipred"
# (ipredbagg of rpart trees, control rpart.control(minsplit = 2, cp = 0, xval = 0), ipred's
# default for classification) on the data with their missing values, which rpart sends
# down its surrogate splits.
options(warn = 1, stringsAsFactors = FALSE)
.outdir <- commandArgs(trailingOnly = TRUE)[1]
source(file.path(.outdir, "params.R"))
suppressPackageStartupMessages({
  library(rpart)
  if ("randomForest" %in% .peers) library(randomForest)
  if ("ranger" %in% .peers) library(ranger)
  if ("ipred" %in% .peers) library(ipred)
})

d <- utils::read.csv(file.path(.outdir, "data.csv"), na.strings = "NA", check.names = FALSE,
                     colClasses = ifelse(.columns %in% c(names(.levels), .char_target),
                                         "character", "numeric"))
for (nm in names(.levels)) d[[nm]] <- factor(d[[nm]], levels = .levels[[nm]])
y <- d[[.target]]
if (.task == "class") y <- factor(y, levels = .classes)
X <- d[setdiff(names(d), .target)]
splits <- as.matrix(utils::read.csv(file.path(.outdir, "splits.csv")))
fills_file <- file.path(.outdir, "fills.csv")
fills <- if (file.exists(fills_file)) {
  utils::read.csv(fills_file, colClasses = "character", na.strings = character(0))
} else NULL

filled <- function(X, s) {
  if (is.null(fills)) return(X)
  f <- fills[fills$split == as.character(s - 1L), , drop = FALSE]
  for (k in seq_len(nrow(f))) {
    nm <- f$column[k]
    miss <- is.na(X[[nm]])
    if (is.factor(X[[nm]])) X[[nm]][miss] <- f$value[k]
    else X[[nm]][miss] <- as.numeric(f$value[k])
  }
  X
}

error_of <- function(pred, truth) {
  if (.task == "class") mean(as.character(pred) != as.character(truth))
  else mean((pred - truth)^2)
}

# Competitor splits change no tree, and surrogate splits only route missing values:
# neither is computed where nothing needs them (cartjit's max_surrogate="auto" likewise
# computes surrogates only for data with missing values).
control <- rpart::rpart.control(minsplit = 2L, cp = 0, xval = 0L, maxcompete = 0L,
                                maxsurrogate = if (anyNA(X)) 5L else 0L)

rows <- list()
add <- function(s, method, test_error, oob_error) {
  rows[[length(rows) + 1L]] <<- data.frame(split = s - 1L, method = method,
                                           test_error = test_error, oob_error = oob_error)
}

for (s in seq_len(ncol(splits))) {
  tr <- splits[, s] == 1L
  te <- !tr
  Xf <- filled(X, s)
  ytr <- y[tr]
  if (.task == "class") ytr <- droplevels(ytr)
  if ("randomForest" %in% .peers) {
    set.seed(.seed + s)
    fit <- randomForest::randomForest(x = Xf[tr, , drop = FALSE], y = ytr, ntree = .ntree,
                                      mtry = .mtry, nodesize = 1L, replace = TRUE)
    oob <- if (.task == "class") fit$err.rate[.ntree, "OOB"] else fit$mse[.ntree]
    add(s, "randomForest", error_of(predict(fit, Xf[te, , drop = FALSE]), y[te]), oob)
  }
  if ("ranger" %in% .peers) {
    train <- Xf[tr, , drop = FALSE]
    train$.y <- ytr
    fit <- ranger::ranger(dependent.variable.name = ".y", data = train,
                          num.trees = .ntree, mtry = .mtry, min.node.size = 1L,
                          replace = TRUE, sample.fraction = 1,
                          respect.unordered.factors = "partition", num.threads = 1L,
                          seed = .seed + s)
    pred <- predict(fit, Xf[te, , drop = FALSE], num.threads = 1L)$predictions
    add(s, "ranger", error_of(pred, y[te]), fit$prediction.error)
  }
  if ("ipred" %in% .peers) {
    set.seed(.seed + s)
    fit <- ipred::ipredbagg(ytr, X[tr, , drop = FALSE], nbagg = .ntree, coob = TRUE,
                            control = control)
    # ipred's OOB estimate for regression is a root mean squared error
    oob <- if (.task == "class") fit$err else fit$err^2
    add(s, "ipred", error_of(predict(fit, X[te, , drop = FALSE]), y[te]), oob)
  }
}
out <- do.call(rbind, rows)
out$test_error <- sprintf("%.17g", out$test_error)
out$oob_error <- sprintf("%.17g", out$oob_error)
utils::write.csv(out, file.path(.outdir, "results.csv"), row.names = FALSE)
