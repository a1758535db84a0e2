# Regenerate the bundled classic data sets of cartjit.datasets from R's mlbench package.
#
# Usage (from the repository root):
#
#   Rscript cartjit/datasets/data/export_classics.R [OUTDIR] [pima]
#
# OUTDIR defaults to the folder of this script. The script writes one CSV file per data
# set (R's write.csv, no row names, R's column names, "NA" for a missing cell) and
# classics_levels.csv, which lists every factor column with its levels in R's order and
# whether the factor is ordered. With mlbench 2.1-x the files come out byte-identical to
# the bundled ones (tests/datasets/test_classics.py checks this when R is installed).
#
# The optional word "pima" also writes pima_indians_diabetes.csv (PimaIndiansDiabetes2,
# zeros that are physically impossible recoded as NA) and pima_indians_diabetes_raw.csv
# (PimaIndiansDiabetes, the zeros kept). They are not bundled with cartjit (see
# docs/datasets.md for why); cartjit.datasets.load_pima_diabetes reads them from a local
# folder.
#
# All the bundled sets come from the UCI Machine Learning Repository through mlbench,
# and are licensed by UCI under CC BY 4.0.

suppressPackageStartupMessages(library(mlbench))

args <- commandArgs(trailingOnly = TRUE)
want_pima <- "pima" %in% args
args <- setdiff(args, "pima")
if (length(args) >= 1) {
  outdir <- args[1]
} else {
  file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  outdir <- if (length(file_arg)) dirname(sub("^--file=", "", file_arg[1])) else "."
}
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)

# cartjit name -> mlbench data set
bundled <- c(
  breast_cancer = "BreastCancer",
  ionosphere = "Ionosphere",
  glass = "Glass",
  sonar = "Sonar",
  soybean = "Soybean",
  vehicle = "Vehicle",
  vowel = "Vowel",
  votes = "HouseVotes84"
)
local_only <- c(
  pima_indians_diabetes = "PimaIndiansDiabetes2",
  pima_indians_diabetes_raw = "PimaIndiansDiabetes"
)

fetch <- function(item) {
  env <- new.env()
  data(list = item, package = "mlbench", envir = env)
  get(item, envir = env)
}

write_set <- function(name, item) {
  frame <- fetch(item)
  path <- file.path(outdir, paste0(name, ".csv"))
  write.csv(frame, path, row.names = FALSE)
  rows <- list()
  for (column in names(frame)) {
    x <- frame[[column]]
    if (is.factor(x)) {
      rows[[length(rows) + 1]] <- data.frame(
        dataset = name, column = column, ordered = is.ordered(x), level = levels(x),
        stringsAsFactors = FALSE
      )
    }
  }
  do.call(rbind, rows)
}

levels_table <- do.call(rbind, Map(write_set, names(bundled), bundled))
write.csv(levels_table, file.path(outdir, "classics_levels.csv"), row.names = FALSE)

if (want_pima) {
  invisible(Map(write_set, names(local_only), local_only))
}
