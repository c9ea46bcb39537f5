"""Stump-forest GAM at scale: fit time, CPU time and memory against HistGradientBoosting.

Rows x 20 features of make_additive_regression, 100 stumps, 5 sweeps (tol=0), on one and
on two threads; HistGradientBoostingRegressor(interaction_cst="no_interactions",
max_iter=100, no early stopping) on as many OpenMP threads in the same run. Each fit runs in a fresh subprocess,
whose resident memory is sampled every 5 ms during the fit (peak RSS minus the RSS before
the fit). Then the same fit on a 2-worker dask LocalCluster, the data generated chunk by
chunk on the workers, with each worker's peak RSS and the sums it sent; from those, the
10^8-row fit on paper. Last, each other option of the fit (varying weights, a categorical
column with NaN, monotone constraints, the classifiers) in memory and on dask, on the same
rows.

Run: python benchmarks/stump_forest_gam_scale.py [--quick]
"""

import json
import multiprocessing as mp
import os
import threading
import time

import numpy as np
from _harness import Report, Target, parse_args

N_FEATURES, N_STUMPS, N_SWEEPS = 20, 100, 5
PACKAGES = ("numpy", "scipy", "scikit-learn", "numba", "dask", "distributed")


class PeakRSS:
    """Samples this process's resident set size in a thread; ``peak`` in bytes."""

    def __init__(self):
        import psutil

        self.process = psutil.Process()
        self.peak = self.process.memory_info().rss
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop:
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.005)

    def __enter__(self):
        self.start = self.process.memory_info().rss
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop = True
        self.thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)


def data(n, seed=0):
    from sklearn_icml.datasets import make_additive_regression

    X, y, _ = make_additive_regression(n, N_FEATURES, random_state=seed)
    return X, y


# the option measured beyond the default binning: EBM's bin count x 4, nearer the paper's
# search over every threshold
FINE_BINS = 4095


def sf_model(threads, max_bins=255):
    from sklearn_icml.gam import StumpForestGAMRegressor

    return StumpForestGAMRegressor(n_stumps=N_STUMPS, max_iter=N_SWEEPS, tol=0.0,
                                   max_bins=max_bins, n_jobs=threads, random_state=0)


def hgb_model():
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(max_iter=N_STUMPS, interaction_cst="no_interactions",
                                         early_stopping=False, random_state=0)


def _one_fit(kind, n, threads, queue):
    from threadpoolctl import threadpool_limits

    X, y = data(n)
    max_bins = FINE_BINS if kind == "sf-fine" else 255
    if kind != "hgb":  # compile the kernels outside the timed fit
        sf_model(threads, max_bins).fit(X[:3000], y[:3000])
    with threadpool_limits(limits=threads):
        model = hgb_model() if kind == "hgb" else sf_model(threads, max_bins)
        with PeakRSS() as rss:
            t0, c0 = time.perf_counter(), time.process_time()
            model.fit(X, y)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    queue.put({"wall": wall, "cpu": cpu, "rss_growth": rss.peak - rss.start, "rss_peak": rss.peak,
               "X_bytes": X.nbytes, "pred": model.predict(X[:1000]).tolist()})


def in_subprocess(target, *args):
    """``target(*args, queue)`` in a fresh (spawned) process; what it puts on the queue."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def fit_in_subprocess(kind, n, threads):
    return in_subprocess(_one_fit, kind, n, threads)


# ---------------------------------------------------------------------------------------
# dask: the data generated per chunk on the workers


def _chunk(i, rows):
    X, y = data(rows, seed=1000 + i)
    return np.hstack([X, y[:, None]])


def _worker_peak_start(dask_worker):
    import psutil

    state = {"peak": psutil.Process().memory_info().rss, "stop": False}

    def run():
        p = psutil.Process()
        while not state["stop"]:
            state["peak"] = max(state["peak"], p.memory_info().rss)
            time.sleep(0.005)

    threading.Thread(target=run, daemon=True).start()
    dask_worker._peak_rss_state = state
    return state["peak"]


def _worker_peak_stop(dask_worker):
    state = dask_worker._peak_rss_state
    state["stop"] = True
    return state["peak"]


class Reductions:
    """Records, in the client, every sum the dask fit asks of the workers: which task, how
    many partitions, the bytes of one partition's result (what each partition sends to the
    client, or up the tree of a direct sum) and the bytes of the arguments sent with each
    task (one task per worker)."""

    def __init__(self):
        self.calls = []

    def __enter__(self):
        import pickle

        from sklearn_icml.gam import _dask

        self._dask, self._tree_sum, self._row_sum = _dask, _dask._tree_sum, _dask.DaskPartitions.row_sum
        inside, calls = [], self.calls
        names = {"_add_counts": "counts + pair counts (one chain per worker)",
                 "_item": "non-finite counts (after binning)", "_n_rows": "row counts"}

        def nbytes(value):
            if isinstance(value, tuple):
                return sum(nbytes(v) for v in value)
            return np.asarray(value).nbytes

        def tree_sum(parts, dask):
            parts = list(parts)
            result = self._tree_sum(parts, dask)
            if not inside:  # a sum the fit asks for directly: named by its tasks
                key = str(parts[0].key).split("-")[0]
                calls.append({"task": names.get(key, key), "parts": len(parts),
                              "up": nbytes(result), "down": 0, "tree": True,
                              "per_worker": key == "_add_counts"})
            return result

        def row_sum(partitions, function, *args):
            inside.append(1)
            try:
                result = self._row_sum(partitions, function, *args)
            finally:
                inside.pop()
            calls.append({"task": function.__name__, "parts": len(partitions.parts),
                          "up": nbytes(result), "down": len(pickle.dumps(args)),
                          "tree": False, "per_worker": False})
            return result

        _dask._tree_sum, _dask.DaskPartitions.row_sum = tree_sum, row_sum
        return self

    def __exit__(self, *exc):
        self._dask._tree_sum, self._dask.DaskPartitions.row_sum = self._tree_sum, self._row_sum


def dask_run(n, n_chunks):
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    rows = n // n_chunks
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, memory_limit=0) as cluster, Client(cluster) as client:
        blocks = [da.from_delayed(dask.delayed(_chunk)(i, rows), (rows, N_FEATURES + 1), float)
                  for i in range(n_chunks)]
        Z = da.concatenate(blocks)
        X, y = Z[:, :N_FEATURES], Z[:, N_FEATURES]
        client.run(lambda: sf_model(1).fit(*data(3000)))  # compile the kernels on the workers
        start = client.run(_worker_peak_start)
        with Reductions() as reductions:
            t0 = time.perf_counter()
            model = sf_model(1).fit(X, y)
            wall = time.perf_counter() - t0
        peaks = client.run(_worker_peak_stop)
    growth = {w: peaks[w] - start[w] for w in peaks}
    return model, wall, peaks, growth, reductions.calls


def chunked_data(n, n_chunks, n_rows=None):
    """The first ``n_rows`` rows (all by default) of the dask run's chunks, in memory."""
    rows = n // n_chunks
    n_rows = n if n_rows is None else n_rows
    # X and y filled separately: X is C-contiguous, so the fit does not copy it
    X, y = np.empty((n_rows, N_FEATURES)), np.empty(n_rows)
    for i in range(-(-n_rows // rows)):
        block = _chunk(i, rows)[:n_rows - i * rows]
        X[i * rows:i * rows + len(block)] = block[:, :N_FEATURES]
        y[i * rows:i * rows + len(block)] = block[:, N_FEATURES]
        del block
    return X, y


def _memory_fit(n, n_chunks, n_pred, queue):
    X, y = chunked_data(n, n_chunks)
    model = sf_model(1)
    model.fit(X[:3000], y[:3000])
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        model.fit(X, y)
        wall = time.perf_counter() - t0
    queue.put({"wall": wall, "peak": rss.peak,
               "growth": rss.peak - rss.start, "features": model.features_.tolist(),
               "thresholds": model.thresholds_.tolist(),
               "pred": model.predict(X[:n_pred]).tolist()})


def on_paper(calls, dask_wall, memory_wall, n_dask, n_chunks, t_top, n_top):
    """The 10^8-row fit on 10 workers of 10^7 rows each, from this run's measurements."""
    from collections import OrderedDict

    n_workers_here = 2
    tasks = OrderedDict()
    for c in calls:
        t = tasks.setdefault(c["task"], {"calls": 0, "up": 0, "down": 0, "parts": c["parts"],
                                         "tree": c["tree"]})
        t["calls"] += 1
        t["up"] = max(t["up"], c["up"])
        t["down"] = max(t["down"], c["down"])
    rows = [[name, t["calls"], t["parts"], t["up"] / 1e3, t["down"] / 1e3,
             t["calls"] * (t["parts"] * t["up"]
                           + (0 if t["tree"] else n_workers_here) * t["down"]) / 1e6]
            for name, t in tasks.items()]
    n_red = len(calls)
    # round-trip overhead: the dask fit's wall time less the row work of one worker (half the
    # rows: the in-memory fit's time scaled by rows), per sum
    overhead = max(0.0, (dask_wall - memory_wall / 2) / n_red)
    W, parts_per_worker, bandwidth = 10, 8, 1.25e9  # 10 Gbit/s network: an assumption
    P = W * parts_per_worker
    hops_w = int(np.ceil(np.log2(W)))
    # each sum of the fit: one task per worker (its arguments sent W times), every
    # partition's result to the client, whose link carries them one after another; the
    # pair counts are summed in place along one chain per worker, then up a tree of W
    comm = sum(c["up"] * hops_w if c["per_worker"] else c["up"] * P + c["down"] * W
               for c in calls) / bandwidth
    worker = t_top * (10**7 / n_top)  # 10^7 rows per worker, at this run's in-memory rate
    total = worker + n_red * overhead + comm
    single = t_top * (10**8 / n_top)
    text = (
        f"The dask fit of {n_dask} rows asked the workers for {n_red} sums (table above: bytes "
        f"of one partition's result and of the arguments sent with each task, as measured in "
        "the client). Only the counts and pair counts (once per fit) are large; the stump "
        "steps and the ridge leaf steps of the squared loss run on the client from the pair "
        "counts; each sweep sends down the forest and gets back one gradient histogram and a "
        "few losses. Each sum is one task per worker over the partitions it holds; the "
        "client adds the partitions' results in partition order.\n\n"
        f"At 10^8 rows on {W} workers ({10**7} rows each, {parts_per_worker} partitions each, "
        f"{P} partitions, every partition's result crossing the client's link, a "
        f"{bandwidth / 1e9:.2f} GB/s network assumed, the rest measured here):\n\n"
        f"- row work per worker: the in-memory one-thread fit's time at {n_top} rows "
        f"({t_top:.3g} s) scaled to {10**7} rows: {worker:.3g} s (the workers run in "
        "parallel; the client's stump steps, which touch no row, are inside this figure);\n"
        f"- dask overhead: {n_red} sums x {overhead * 1e3:.3g} ms per sum (this run's dask "
        f"wall time {dask_wall:.3g} s less half the in-memory fit's {memory_wall:.3g} s, per "
        "sum: scheduling, transfers on one machine, and the dask path's extra row passes, as "
        f"each partition recomputes its scores when it needs them): {n_red * overhead:.3g} s;\n"
        f"- communication: {comm:.3g} s (every partition's result of each sum, "
        f"{sum(c['up'] for c in calls if not c['per_worker']) / 1e6:.3g} MB per partition "
        "over the fit, and the pair counts once per worker, up a tree of the workers; plus "
        "the arguments);\n"
        f"- in all about {total:.3g} s, against {single:.3g} s for one process at the "
        f"measured in-memory rate (if it had the {10**8 * N_FEATURES * 9 / 1e9:.0f} GB of "
        "float64 input and bins in memory).")
    return rows, text


# ---------------------------------------------------------------------------------------
# the other options on dask: each fit in memory and on the cluster, the same rows


def option_cases(n, seed=0):
    """``(name, estimator, X, y, sample_weight, as_frame)`` of each option measured."""
    import pandas as pd

    from sklearn_icml.gam import StumpForestGAMClassifier, StumpForestGAMRegressor

    X, y = data(n, seed)
    rng = np.random.default_rng(seed)
    small = {"n_stumps": 20, "max_iter": 3, "tol": 0.0, "random_state": 0}
    weights = rng.uniform(0.5, 2.0, n)
    colour = pd.Categorical(rng.choice(["red", "green", "blue", "grey"], n))
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(N_FEATURES)]).assign(colour=colour)
    frame.loc[rng.random(n) < 0.1, "x1"] = np.nan
    y_frame = y + np.select([colour == "red", colour == "green"], [1.0, -1.0], 0.0)
    levels = np.quantile(y, [1 / 3, 2 / 3])
    monotone = [1, -1] + [0] * (N_FEATURES - 2)
    return [
        ("regressor, varying weights", StumpForestGAMRegressor(**small), X, y, weights, False),
        ("regressor, categorical column and NaN (DataFrame)", StumpForestGAMRegressor(**small),
         frame, y_frame, None, True),
        ("regressor, monotonic_cst on 2 features", StumpForestGAMRegressor(
            **small, monotonic_cst=monotone, l2_reg=1.0), X, y, None, False),
        ("binary classifier", StumpForestGAMClassifier(**small), X, y > np.median(y), None,
         False),
        ("3-class classifier", StumpForestGAMClassifier(**small), X, np.digitize(y, levels),
         None, False),
    ]


def options_run(n, n_chunks):
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster
    from sklearn.base import clone, is_classifier

    rows = []
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.run(lambda: sf_model(1).fit(*data(3000)))  # compile the kernels on the workers
        for name, estimator, X, y, w, as_frame in option_cases(n):
            warm = clone(estimator).set_params(n_stumps=2, max_iter=1)
            warm.fit(X[:3000] if not as_frame else X.iloc[:3000], y[:3000])
            t0 = time.perf_counter()
            memory = clone(estimator).fit(X, y, sample_weight=w)
            t_memory = time.perf_counter() - t0
            chunk = n // n_chunks
            if as_frame:
                Xd = dd.from_pandas(X, npartitions=n_chunks)
                yd = dd.from_pandas(pd.Series(y), npartitions=n_chunks)
            else:
                Xd, yd = da.from_array(X, chunks=(chunk, -1)), da.from_array(y, chunks=chunk)
            wd = None if w is None else da.from_array(w, chunks=chunk)
            with Reductions() as reductions:
                t0 = time.perf_counter()
                model = clone(estimator).fit(Xd, yd, sample_weight=wd)
                t_dask = time.perf_counter() - t0
            same = (np.array_equal(model.features_, memory.features_)
                    and np.array_equal(model.thresholds_, memory.thresholds_, equal_nan=True))
            out = "predict_proba" if is_classifier(estimator) else "predict"
            diff = float(np.max(np.abs(getattr(model, out)(X) - getattr(memory, out)(X))))
            objective = abs(model.objective_history_[-1] / memory.objective_history_[-1] - 1)
            rows.append([name, t_memory, t_dask, t_dask / t_memory, len(reductions.calls),
                         same, diff, objective])
            print(f"{name}: memory {t_memory:.3g} s, dask {t_dask:.3g} s, same {same}, "
                  f"diff {diff:.2g}", flush=True)
    return rows


def main():
    args = parse_args(__doc__)
    sizes = [10**4, 10**5] if args.quick else [10**4, 10**5, 10**6, 10**7]
    two_threads_up_to = sizes[-1]
    report = Report("stump_forest_gam_scale", "Stump-forest GAM at scale", quick=args.quick,
                    packages=PACKAGES)
    report.add("Setup", (
        f"make_additive_regression rows x {N_FEATURES} features; StumpForestGAMRegressor("
        f"n_stumps={N_STUMPS}, max_iter={N_SWEEPS}, tol=0) against HistGradientBoosting"
        f"Regressor(max_iter={N_STUMPS}, interaction_cst='no_interactions', early_stopping="
        "False). Each fit in a fresh process, after a small warm-up fit that compiles the "
        "kernels; peak RSS sampled every 5 ms. The machine (2 cores) was shared with other "
        "jobs: only ratios measured in the same run are meaningful, one thread each."))
    rows, results = [], {}
    for n in sizes:
        for threads in (1, 2) if n <= two_threads_up_to else (1,):
            sf = fit_in_subprocess("sf", n, threads)
            hgb = fit_in_subprocess("hgb", n, threads)
            results[(n, threads)] = (sf, hgb)
            print(f"{n} rows, {threads} thread(s): SF {sf['wall']:.3g} s, HGB {hgb['wall']:.3g} s",
                  flush=True)
            steps = N_STUMPS * (N_SWEEPS + 1)  # greedy init + sweeps
            visits = steps * n * N_FEATURES
            rows.append([n, threads, sf["wall"], sf["cpu"], hgb["wall"], hgb["cpu"],
                         sf["wall"] / hgb["wall"], visits / sf["wall"] / 1e9,
                         sf["rss_growth"] / 2**20, (sf["X_bytes"] * 9 / 8) / 2**20,
                         hgb["rss_growth"] / 2**20])
    report.add_table(
        "In memory: fit time and memory", [
            "rows", "threads", "SF wall s", "SF CPU s", "HGB wall s", "HGB CPU s",
            "SF / HGB wall", "SF bin visits / s (1e9, equivalent)", "SF RSS growth MiB",
            "X float64 + bins MiB", "HGB RSS growth MiB"], rows,
        note=("Bin visits: stump steps (greedy init + sweeps = 600) x rows x features, "
              "the visits of one pass over the binned data per stump step, divided by the "
              "fit's wall time. With pair counts (squared loss, constant weights, when the "
              "pair table is at most half the float64 input) the fit passes over the rows "
              "about 3 times per sweep instead of once per stump step, so this is the rate "
              "of an equivalent pass-per-step fit."))
    fine_rows = []
    for n in sizes[1:3]:
        fine = fit_in_subprocess("sf-fine", n, 1)
        default, hgb = results[(n, 1)]
        fine_rows.append([n, fine["wall"], default["wall"], hgb["wall"],
                          fine["wall"] / default["wall"], fine["wall"] / hgb["wall"],
                          fine["rss_growth"] / 2**20])
    report.add_table(
        f"In memory, max_bins={FINE_BINS} (beyond the defaults), one thread", [
            "rows", "SF wall s", "default SF wall s", "HGB wall s", "SF / default SF",
            "SF / HGB wall", "SF RSS growth MiB"], fine_rows,
        note=(f"The same fit with {FINE_BINS} quantile bins per feature instead of 255, in a "
              "fresh process after its own warm-up; the default's and HGB's times are those "
              "of the table above. The bins are uint16 instead of uint8, and the pair table "
              "grows with the square of the bin count (about 258x that of 255 bins, 12.7 GB "
              "at 20 features), far above half the input: every stump step passes over the "
              "rows."))
    n_mid, n_top = (10**6, sizes[-1]) if not args.quick else (sizes[-1], sizes[-1])
    ratio = results[(n_mid, 1)][0]["wall"] / results[(n_mid, 1)][1]["wall"]
    growth = (results[(n_top, 1)][0]["wall"] / results[(sizes[1], 1)][0]["wall"]) / (
        n_top / sizes[1])
    mem = results[(n_top, 1)][0]
    growth_top = (results[(n_top, 1)][0]["wall"] / results[(n_mid, 1)][0]["wall"]) / (
        n_top / n_mid)
    targets = [
        [f"SF / HGB wall at {n_mid} rows, one thread", str(Target(hi=0.4)), ratio,
         Target(hi=0.4).check(ratio)],
        [f"growth {sizes[1]} -> {n_top} rows / linear, one thread", str(Target(hi=1.2)),
         growth, Target(hi=1.2).check(growth)],
        [f"  (the same, {n_mid} -> {n_top}; at 10^5 the pair table is larger than half the input, so no pair counts)",
         str(Target(hi=1.2)), growth_top, Target(hi=1.2).check(growth_top)],
        [f"SF RSS growth / (X float64 + bins) at {n_top}", str(Target(hi=1.0)),
         mem["rss_growth"] / (mem["X_bytes"] * 9 / 8),
         Target(hi=1.0).check(mem["rss_growth"] / (mem["X_bytes"] * 9 / 8))],
    ]

    n_dask, n_chunks = (2 * 10**5, 8) if args.quick else (10**7, 16)
    n_pred = min(n_dask, 10**6)
    model, wall, peaks, grow, calls = dask_run(n_dask, n_chunks)
    memory = in_subprocess(_memory_fit, n_dask, n_chunks, n_pred)
    same = (memory["features"] == model.features_.tolist()
            and memory["thresholds"] == model.thresholds_.tolist())
    X_pred, _ = chunked_data(n_dask, n_chunks, n_pred)
    diff = float(np.max(np.abs(np.asarray(memory["pred"]) - model.predict(X_pred))))
    del X_pred
    worst = max(peaks.values())
    report.add_table(
        f"Dask: {n_dask} rows generated in {n_chunks} chunks on a 2-worker LocalCluster", [
            "fit", "wall s", "peak RSS MiB", "RSS growth in fit MiB"],
        [["in memory, one process", memory["wall"], memory["peak"] / 2**20,
          memory["growth"] / 2**20]]
        + [[f"dask worker {i}", wall, peaks[w] / 2**20, grow[w] / 2**20]
           for i, w in enumerate(sorted(peaks))],
        note=("The chunks are generated on the workers (make_additive_regression, one seed "
              "per chunk); no process holds all rows. The in-memory fit generates the same "
              "chunks in its own process. Peak RSS of the in-memory process includes the "
              "data it fits (X, y) and its interpreter; each worker's includes its half of "
              "the chunks, binned, and its interpreter (with dask, distributed and the "
              f"compiled kernels). Predictions compared on the first {n_pred} rows."))
    targets += [
        ["dask worker peak RSS / in-memory peak RSS (worst worker)", str(Target(hi=0.6)),
         worst / memory["peak"], Target(hi=0.6).check(worst / memory["peak"])],
        ["dask forest = in-memory forest (features, thresholds)", "True", same,
         "met" if same else "MISSED"],
        [f"max |prediction difference| dask vs memory ({n_pred} rows)", str(Target(hi=1e-8)),
         diff, Target(hi=1e-8).check(diff)],
    ]
    report.add_table("Targets", ["quantity", "target", "measured", "holds"], targets)
    paper_rows, paper_text = on_paper(calls, wall, memory["wall"], n_dask, n_chunks,
                                      results[(n_top, 1)][0]["wall"], n_top)
    report.add_table(
        f"Communication of the dask fit ({n_dask} rows, {n_chunks} partitions), measured", [
            "sum over partitions", "times", "partitions", "result kB per partition",
            "arguments kB per partition", "total MB moved"], paper_rows)
    report.add("10^8 rows on paper", paper_text)

    n_options, chunks_options = (2 * 10**4, 4) if args.quick else (10**5, 8)
    option_rows = options_run(n_options, chunks_options)
    report.add_table(
        f"The other options on dask: {n_options} rows x {N_FEATURES} features, "
        f"{chunks_options} partitions, 2-worker LocalCluster", [
            "fit (20 stumps, 3 sweeps)", "in memory s", "dask s", "dask / memory",
            "sums asked", "same stumps", "max |difference| (prediction or probability)",
            "objective relative difference"],
        option_rows,
        note=("The same rows in memory (one process) and as dask chunks. Without pair counts "
              "(varying weights, the classifiers) every stump step asks for sums: the "
              "histograms of the forest without the stump and, for the classifiers, one sum "
              "per Newton step of the two new leaves and one for the losses of the new and "
              "the old stump; the classifiers' leaf steps (Newton) one sum per point of their "
              "line search. "
              "On one machine each sum costs a round trip to the workers, so these fits are "
              "slower than in memory; they are for data that does not fit one machine."))
    for name, *_, same, diff, objective in option_rows:
        targets.append([f"{name}: dask forest = in-memory forest (stumps; max difference)",
                        "True; <= 1e-08", f"{same}; {diff:.3g} (objectives {objective:.1g})",
                        "met" if same and diff <= 1e-8 else "MISSED"])
    report.add_table("Targets (the other options)", ["quantity", "target", "measured",
                                                      "holds"], targets[-len(option_rows):])
    if args.quick:
        report.add("Not measured in this run", "- 10^6 and 10^7 rows (a --quick run).")
    print(json.dumps({str(k): [v[0]["wall"], v[1]["wall"]] for k, v in results.items()}))
    report.write()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    main()
