"""Stump-forest GAM: the fit's peak memory on float32 and float64 input.

The same values (make_additive_regression rows x 50 features, rounded to float32) given to
StumpForestGAMRegressor as float32 and as float64, one thread. Each fit runs in a fresh
(spawned) process, after a small warm-up fit that compiles the kernels; its resident memory
is sampled every 5 ms during the fit, and the peak growth (peak RSS minus the RSS before
the fit) is compared with the size of the input and of its bins (one byte per value). The
float32 fit must grow no more than the float64 one, both well under the input plus the
bins (beyond the pair-count table of a constant-weight fit), and both must give the same
predictions. Each process fits three times; the median growth is reported.

Run: python benchmarks/stump_forest_gam_memory.py [--quick]
"""

import os
import time

import numpy as np
from _harness import Report, Target, parse_args
from stump_forest_gam_scale import PeakRSS, in_subprocess

N_FEATURES, N_STUMPS, N_SWEEPS, N_PRED, REPEAT = 50, 10, 1, 1000, 3
PACKAGES = ("numpy", "scipy", "scikit-learn", "numba", "psutil")
# the fits: constant weights (the squared loss then works from pair counts, when their
# table is at most half the size of the float64 input) and varying weights (passes over
# the rows, no table)
CASES = ("constant weights", "varying weights")


def pair_table_bytes(n, weights):
    """Bytes of the pair-count table the fit keeps (0 when it keeps none); the rule of
    ``_optimizer.StumpForestProblem.use_pairs``, which counts the float64 size whatever
    the input's dtype."""
    from sklearn_icml.gam import _optimizer

    table = 4 * N_FEATURES * (N_FEATURES - 1) // 2 * 256**2  # max_bins=255: 256 codes
    small = table <= _optimizer.PAIR_TABLE_MAX_FRACTION * 8 * n * N_FEATURES
    return table if weights == "constant weights" and small else 0


def data(n):
    """``(X, y)``: X float32 (generated in blocks, so no float64 copy of it is ever held)."""
    from sklearn_icml.datasets import make_additive_regression

    X, y = np.empty((n, N_FEATURES), dtype=np.float32), np.empty(n)
    block = 250_000
    for i, start in enumerate(range(0, n, block)):
        rows = min(block, n - start)
        Xb, yb, _ = make_additive_regression(rows, N_FEATURES, random_state=i)
        X[start:start + rows], y[start:start + rows] = Xb, yb
    return X, y


def model():
    from sklearn_icml.gam import StumpForestGAMRegressor

    return StumpForestGAMRegressor(n_stumps=N_STUMPS, max_iter=N_SWEEPS, tol=0.0, n_jobs=1,
                                   random_state=0)


def _one_fit(n, dtype, weights, queue):
    import statistics
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    warnings.simplefilter("ignore", ConvergenceWarning)
    X, y = data(n)
    if dtype == "float64":
        X = X.astype(np.float64)  # the same values; the float32 array is freed
    w = None
    if weights == "varying weights":
        w = np.random.default_rng(0).uniform(0.5, 2.0, n)
    model().fit(X[:3000], y[:3000])  # compile the kernels outside the measured fits
    growths, walls = [], []
    with threadpool_limits(limits=1):
        for _ in range(REPEAT):
            fitted = model()
            with PeakRSS() as rss:
                t0 = time.perf_counter()
                fitted.fit(X, y, sample_weight=w)
                walls.append(time.perf_counter() - t0)
            growths.append(rss.peak - rss.start)
            del rss
    queue.put({"wall": statistics.median(walls), "growth": statistics.median(growths),
               "spread": max(growths) - min(growths), "X_bytes": X.nbytes,
               "bins_bytes": X.shape[0] * X.shape[1],
               "pred": fitted.predict(X[:N_PRED]).tolist()})


def main():
    args = parse_args(__doc__)
    sizes = [10**5, 2 * 10**5] if args.quick else [2 * 10**5, 2 * 10**6]
    report = Report("stump_forest_gam_memory", "Stump-forest GAM: peak memory of a fit on "
                    "float32 and float64 input", quick=args.quick, packages=PACKAGES)
    report.add("Setup", (
        f"make_additive_regression rows x {N_FEATURES} features, stored as float32; the "
        "float64 case fits the same values cast to float64. StumpForestGAMRegressor("
        f"n_stumps={N_STUMPS}, max_iter={N_SWEEPS}, tol=0, n_jobs=1) under one BLAS/OpenMP "
        "thread, with constant weights and with weights drawn from U(0.5, 2). Each case in a "
        "fresh spawned process, after a warm-up fit on 3000 rows, fitted three times; RSS "
        "sampled every 5 ms during the fit; glibc's mmap threshold fixed at 1 MiB in those "
        "processes (MALLOC_MMAP_THRESHOLD_), so that a freed array leaves the RSS. Peak growth: peak RSS minus the RSS before the "
        "fit (the input itself is not counted). Bins: one byte per value (uint8 codes)."))
    rows, targets = [], []
    for n in sizes:
        for weights in CASES:
            runs = {dt: in_subprocess(_one_fit, n, dt, weights) for dt in ("float32", "float64")}
            table = pair_table_bytes(n, weights)
            for dt, r in runs.items():
                print(f"{n} rows, {weights}, {dt}: growth {r['growth'] / 2**20:.1f} MiB, "
                      f"{r['wall']:.3g} s", flush=True)
                rows.append([n, weights, dt, r["X_bytes"] / 2**20, r["bins_bytes"] / 2**20,
                             table / 2**20, r["growth"] / 2**20, r["spread"] / 2**20,
                             (r["growth"] - table) / (r["X_bytes"] + r["bins_bytes"]),
                             r["wall"]])
            f32, f64 = runs["float32"], runs["float64"]
            excess = (f32["growth"] - f64["growth"]) / 2**20
            same = f32["pred"] == f64["pred"]
            label = f"{n} rows, {weights}"
            targets.append([f"{label}: float32 growth - float64 growth (MiB)",
                            str(Target(hi=4.0)), excess, Target(hi=4.0).check(excess)])
            for dt, r in runs.items():
                share = (r["growth"] - table) / (r["X_bytes"] + r["bins_bytes"])
                targets.append([f"{label}: {dt} growth less the pair table / (X + bins)",
                                str(Target(hi=0.5)), share, Target(hi=0.5).check(share)])
            targets.append([f"{label}: float32 predictions = float64 predictions "
                            f"(first {N_PRED} rows)", "True", same, "met" if same else "MISSED"])
    report.add_table(
        "Peak RSS growth of the fit", [
            "rows", "weights", "X dtype", "X MiB", "bins MiB", "pair table MiB",
            f"peak growth MiB (median of {REPEAT})", "spread of the repeats MiB",
            "(growth - pair table) / (X + bins)", "fit s"],
        rows,
        note=("The growth holds the bins, the target's scores and the weights (float64, "
              "one per row), the fit's histograms and, with constant weights, the pair-count "
              "table (its size given by its formula, 4 bytes x 1225 feature pairs x 256^2 "
              "codes, kept when at most half the size of the input as float64, whatever its "
              "dtype, so that both dtypes take the same path). Neither dtype is copied "
              "whole: float32 values are compared with the float64 bin edges as the float64 "
              "they equal. Repeated fits in one process differ by a few MiB (the spread "
              "column), hence the 4 MiB band of the float32 - float64 difference."))
    report.add_table("Targets", ["quantity", "target", "measured", "holds"], targets)
    if args.quick:
        report.add("Not measured in this run", "- 2 * 10^6 rows (a --quick run).")
    report.write()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    # the fits' processes allocate every array of 1 MiB or more by mmap and give it back
    # when freed (glibc's threshold fixed, not raised by earlier frees), so that their RSS
    # follows the arrays alive rather than how earlier frees left the heap
    os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(2**20))
    main()
