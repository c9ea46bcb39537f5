"""SerLiC: lossless LiDAR reflectance compression; experiments E1-E3 and the peers.

Run: python benchmarks/serlic_reflectance_compression.py [--quick]

Every coder codes the same generated test sweeps (make_lidar_sweep, seeds 1000..1004);
rates are bits per point (bpp) of the real coded size unless a row says "entropy".
"""

import bz2
import io
import lzma
import os
import sys
import time
import zlib

import numpy as np
from _harness import Report, fmt, median_time, parse_args

from sklearn_icml.compression import AdaptiveContextCodec, ScanOrderSerializer, SerLiCCodec
from sklearn_icml.datasets import make_lidar_sweep

TRAIN_SEEDS = range(16)
TEST_SEEDS = range(1000, 1005)
# the calibrated schedule: 20 epochs at batch 32 (1,280 steps), lr 3e-3 cosine
E1 = {"window": 256, "d_model": 32, "n_layers": 2, "batch_size": 32, "learning_rate": 3e-3,
      "n_jobs": 1, "random_state": 0}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def entropy(symbols):
    counts = np.bincount(symbols, minlength=256)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum())


def bpp_of(nbytes, n):
    return 8.0 * nbytes / n


# peers


def general_purpose():
    coders = {
        "zlib -9": lambda b: zlib.compress(b, 9),
        "lzma -9e": lambda b: lzma.compress(b, preset=9 | lzma.PRESET_EXTREME),
        "bz2 -9": lambda b: bz2.compress(b, 9),
    }
    try:
        import zstandard

        coders["zstd -22"] = zstandard.ZstdCompressor(level=22).compress
    except ImportError:
        log("zstandard not installed: skipped")
    try:
        import brotli

        coders["brotli -11"] = lambda b: brotli.compress(b, quality=11)
    except ImportError:
        log("brotli not installed: skipped")
    return coders


def laz_intensity_bytes(points, r):
    """Bytes LASzip (laspy + lazrs) spends on the intensity field: size(r) - size(zeros)."""
    import laspy

    def size(intensity):
        header = laspy.LasHeader(point_format=0, version="1.2")
        header.scales = np.array([0.001, 0.001, 0.001])
        header.offsets = np.zeros(3)
        las = laspy.LasData(header)
        las.x, las.y, las.z = points[:, 0], points[:, 1], points[:, 2]
        las.intensity = intensity.astype(np.uint16)
        buf = io.BytesIO()
        las.write(buf, do_compress=True, laz_backend=laspy.LazBackend.Lazrs)
        return len(buf.getvalue())

    return size(r) - size(np.zeros_like(r))


def peers(report, tests, scan_orders, quick):
    coders = general_purpose()
    rows, per_sweep = [], {}

    def add(name, values, note=""):
        per_sweep[name] = values
        rows.append([name, np.mean(values), np.min(values), np.max(values), note])

    add("raw", [8.0] * len(tests))
    add("oracle (entropy, knows the hidden materials)", [t[2].mean() for t in tests])
    add("order-0 (entropy)", [entropy(t[1]) for t in tests])
    add("differences, scan order (entropy)",
        [entropy((t[1][o].astype(int) - np.r_[0, t[1][o][:-1]]) % 256)
         for t, o in zip(tests, scan_orders)])
    for name, coder in coders.items():
        add(f"{name}, scan order", [bpp_of(len(coder(t[1][o].tobytes())), t[1].size)
                                    for t, o in zip(tests, scan_orders)])
        add(f"{name}, file (random) order",
            [bpp_of(len(coder(t[1].tobytes())), t[1].size) for t in tests])
    try:
        add("LASzip (laspy+lazrs) intensity, scan order",
            [bpp_of(laz_intensity_bytes(t[0][o], t[1][o]), t[1].size)
             for t, o in zip(tests, scan_orders)], "size(r) - size(zeros)")
    except ImportError:
        log("laspy/lazrs not installed: LASzip skipped")
    for serialization in ("scan", "random"):
        codec = AdaptiveContextCodec(serialization=serialization).fit([t[:2] for t in tests])
        values = []
        for t in tests:
            blob = codec.encode((t[0], t[1]))
            assert np.array_equal(codec.decode(blob, t[0]), t[1])
            values.append(bpp_of(len(blob), t[1].size))
        add(f"AdaptiveContextCodec (order-1), {serialization} order", values, "lossless checked")
    report.add_table(
        f"Peers on the test sweeps (seeds {TEST_SEEDS.start}..{TEST_SEEDS.stop - 1})",
        ["coder", "bpp mean", "min", "max", "note"],
        rows,
        note="Reference prototype (means): oracle 3.96, order-0 5.92, differences 4.40, "
        "zlib scan 5.70, lzma scan 4.55, zlib random 6.15, lzma random 6.08.",
    )
    return per_sweep


def peer_times(tests, scan_orders):
    """Median encode/decode seconds on the first test sweep."""
    points, r = tests[0][:2]
    o = scan_orders[0]
    out = {}
    for name, coder in general_purpose().items():
        data = r[o].tobytes()
        blob = coder(data)
        dec = {"zlib -9": zlib.decompress, "lzma -9e": lzma.decompress,
               "bz2 -9": bz2.decompress}.get(name)
        if dec is None and name.startswith("zstd"):
            import zstandard

            dec = zstandard.ZstdDecompressor().decompress
        if dec is None and name.startswith("brotli"):
            import brotli

            dec = brotli.decompress
        enc_t, _ = median_time(lambda c=coder, d=data: c(d), repeat=3)
        dec_t, _ = median_time(lambda f=dec, b=blob: f(b), repeat=3)
        out[name] = (enc_t, dec_t)
    codec = AdaptiveContextCodec().fit([(points, r)])
    blob = codec.encode((points, r))
    enc_t, _ = median_time(lambda: codec.encode((points, r)), repeat=3)
    dec_t, _ = median_time(lambda: codec.decode(blob, points), repeat=3)
    out["AdaptiveContextCodec"] = (enc_t, dec_t)
    return out


# SerLiC


def fit_codec(name, train, **params):
    codec = SerLiCCodec(**params)
    start = time.perf_counter()
    codec.fit(train)
    seconds = time.perf_counter() - start
    steps = codec.n_steps_
    log(f"{name}: fitted in {seconds:.0f} s ({steps} steps), train bpp "
        f"{codec.train_bpp_[-1] if codec.train_bpp_ else float('nan'):.3f}")
    return codec, seconds, steps


def code_sweeps(codec, tests, **kwargs):
    """Real coded bpp per sweep, cross-entropy per sweep, exactness of every round trip."""
    coded, xent, exact = [], [], True
    for points, r, _, _ in tests:
        blob = codec.encode((points, r), **kwargs)
        exact &= bool(np.array_equal(codec.decode(blob, points), r))
        coded.append(bpp_of(len(blob), r.size))
        xent.append(codec.bits_per_point([(points, r)], **kwargs))
    return np.array(coded), np.array(xent), exact


def band(value, target, width=0.10):
    """Pass/fail of a target band, saying on which side a miss lies (lower bpp is better)."""
    if abs(value - target) <= width:
        return "True"
    return "False: below the band (better)" if value < target else "False: above the band"


def e1(report, train, tests, peer_bpp, configs):
    """configs: (model, epochs, target mean bpp, target note) per trained codec."""
    results = {}
    lz = np.array(peer_bpp["lzma -9e, scan order"])
    oracle = np.array(peer_bpp["oracle (entropy, knows the hidden materials)"])
    rows, sweep_rows, curves = [], [], []
    for model, epochs, target, target_note in configs:
        codec, fit_s, steps = fit_codec(f"E1 {model}", train, sequence_model=model,
                                        max_epochs=epochs, **E1)
        coded, xent, exact = code_sweeps(codec, tests)
        results[model] = (codec, coded)
        n = np.array([t[1].size for t in tests])
        bound = np.abs(coded - xent) * n / 8 <= 0.005 * xent * n / 8 + 64
        tag = f"{model}, {steps} steps"
        rows += [
            [f"{tag}: mean bpp (real coded size)", f"{target} +- 0.10 ({target_note})",
             f"{coded.mean():.3f}", band(coded.mean(), target)],
            [f"{tag}: worst sweep", "<= 4.55", f"{coded.max():.3f}", bool(coded.max() <= 4.55)],
            [f"{tag}: (a) bpp < lzma - 0.15, every sweep", "5/5",
             f"{int(np.sum(coded < lz - 0.15))}/5", bool(np.all(coded < lz - 0.15))],
            [f"{tag}: (b) bpp >= oracle - 0.03, every sweep", "5/5",
             f"{int(np.sum(coded >= oracle - 0.03))}/5", bool(np.all(coded >= oracle - 0.03))],
            [f"{tag}: (c) coded size within 0.5% + 64 B of cross-entropy", "5/5",
             f"{int(bound.sum())}/5", bool(bound.all())],
            [f"{tag}: (d) exact round trip", "True", str(exact), exact],
            [f"{tag}: parameters / fit time", "~44K (GRU prototype) / -",
             f"{codec.n_params_} / {fit_s:.0f} s", "-"],
        ]
        for k, seed in enumerate(TEST_SEEDS):
            sweep_rows.append([tag, seed, f"{coded[k]:.3f}", f"{xent[k]:.3f}",
                               f"{lz[k] - coded[k]:+.3f}", f"{coded[k] - oracle[k]:+.3f}"])
        curves.append([tag, " / ".join(f"{b:.2f}" for b in codec.train_bpp_)])
    report.add_table(
        f"E1: rate on generated sweeps (train seeds 0..{len(train) - 1}, W=256, d_model=32, "
        "2 layers, batch 32, lr 3e-3 cosine, scalar prior-reflectance input)",
        ["check", "target", "measured", "pass"],
        rows,
        note="Reference prototype (GRU, 1,280 steps): 4.242 / 4.273 / 4.133 / 4.135 / 4.471, "
        "mean 4.251; (GRU, 512 steps): mean 4.53, failing (a) on three sweeps.",
    )
    report.add_table(
        "E1 per sweep",
        ["model", "seed", "coded bpp", "cross-entropy bpp", "lzma - coded", "coded - oracle"],
        sweep_rows,
    )
    report.add_table("E1 training curves (train bpp per epoch)", ["model", "bpp"], curves)
    return results


def e2(report, train, tests, e1_coded, model, epochs):
    codec, fit_s, steps = fit_codec(f"E2 {model} random", train, sequence_model=model,
                                    serialization="random", max_epochs=epochs, **E1)
    coded, _, exact = code_sweeps(codec, tests)
    rise = coded.mean() - e1_coded.mean()
    curve = " / ".join(f"{b:.2f}" for b in codec.train_bpp_)
    report.add_table(
        f"E2: random serialisation ({model}, {steps} steps)",
        ["quantity", "target", "measured", "pass"],
        [
            ["E1 scan order, mean bpp", "-", f"{e1_coded.mean():.3f}", "-"],
            ["random order, mean bpp", "about 5.5 to 6.0", f"{coded.mean():.3f}", "-"],
            ["rise", ">= 1.0", f"{rise:.3f}", bool(rise >= 1.0)],
            ["exact round trip", "True", str(exact), exact],
            ["fit time / steps", "-", f"{fit_s:.0f} s / {steps}", "-"],
        ],
        note="lzma shows the same effect: 4.55 (scan) -> 6.08 (random). The "
        "5.5 to 6.0 expected for the random order was not measured by the prototype; a model in random "
        "order still sees each point's laser, azimuth and distance (the ground's reflectance "
        "is a function of them) and the other points of its window. Train bpp per epoch: "
        f"{curve}.",
    )


def e3(report, codec, tests, peer_t, quick):
    points, r = tests[0][:2]
    rows = []
    bpps = []
    for window in (16, 64, 256):
        xent = np.mean([codec.bits_per_point([t[:2]], window=window) for t in tests])
        bpps.append(xent)
        rows.append([window, f"{xent:.3f}"])
    non_increasing = bool(all(b2 <= b1 + 0.01 for b1, b2 in zip(bpps, bpps[1:])))
    rows_t = []
    repeat = 1 if quick else 3
    for threads, reps in ((1, repeat), (2, 1)):
        codec.set_params(n_jobs=threads)  # coding only: the fitted model is unchanged
        blob = codec.encode((points, r))
        enc_t, _ = median_time(lambda: codec.encode((points, r)), repeat=reps, warmup=0)
        dec_t, out = median_time(lambda b=blob: codec.decode(b, points), repeat=reps,
                                  warmup=0)
        rows_t.append((threads, reps, enc_t, dec_t, bool(np.array_equal(out, r))))
    codec.set_params(n_jobs=1)
    report.add_table(
        f"E3: window length ({codec.sequence_model} model trained at W=256; mean "
        "cross-entropy over the test sweeps)",
        ["W", "bpp"],
        rows,
        note=f"Non-increasing in W (within 0.01): {non_increasing} (target: True).",
    )
    enc_1, dec_1 = rows_t[0][2], rows_t[0][3]
    trows = [[f"SerLiCCodec ({codec.sequence_model}), n_jobs={th}", f"{r.size}",
              f"{e:.2f}", f"{d:.2f}", fmt(e / enc_1), fmt(d / dec_1), "decode < 10 s",
              bool(d < 10), f"median of {reps}, lossless {ok}"]
             for th, reps, e, d, ok in rows_t]
    for name, (e, d) in peer_t.items():
        trows.append([name, f"{r.size}", f"{e:.3f}", f"{d:.3f}", fmt(e / enc_1),
                      fmt(d / dec_1), "-", "-", "median of 3"])
    report.add_table(
        f"E3: encode/decode time per sweep (seed {TEST_SEEDS.start})",
        ["coder", "points", "encode s", "decode s", "encode / SerLiC(1 thread)",
         "decode / SerLiC(1 thread)", "target", "pass", "note"],
        trows,
        note="Times on a 2-core machine shared with other jobs: compare ratios. The coder's "
        "per-step torch operations are tiny, so intra-op threads mostly add synchronisation: "
        "when other jobs keep the cores busy, 2 threads can be several times slower than 1 "
        "(seen in earlier runs here).",
    )


def main(argv=None):
    args = parse_args(__doc__.splitlines()[0], argv)
    quick = args.quick
    report = Report(
        "serlic_reflectance_compression",
        "SerLiC: lossless LiDAR reflectance compression by scan-order serialisation",
        quick=quick,
        packages=("numpy", "scikit-learn", "torch", "mambapy", "constriction", "numba"),
    )
    start = time.perf_counter()
    train_seeds = range(2) if quick else TRAIN_SEEDS
    test_seeds = TEST_SEEDS
    # (model, epochs, target mean bpp, where the target comes from)
    configs = [("mamba", 20, 4.25, "E1 target, 1,280 steps"),
               ("gru", 8, 4.53, "prototype at 512 steps")]
    e2_epochs = 20  # E2 needs E1's training budget (see Notes)
    if quick:
        configs = [("mamba", 1, 4.25, "E1 target"), ("gru", 1, 4.53, "prototype")]
        e2_epochs = 1
    log("generating sweeps")
    train = [make_lidar_sweep(random_state=s)[:2] for s in train_seeds]
    tests = [make_lidar_sweep(random_state=s) for s in test_seeds]
    serializer = ScanOrderSerializer()
    scan_orders = [serializer.get_order(t[0]) for t in tests]
    recovered = all(
        np.array_equal(t[0][o], make_lidar_sweep(random_state=s, shuffle=False)[0])
        for t, o, s in zip(tests, scan_orders, test_seeds)
    )
    report.add(
        "Setup",
        f"Train sweeps: seeds {train_seeds.start}..{train_seeds.stop - 1}; test sweeps: seeds "
        f"{test_seeds.start}..{test_seeds.stop - 1} ({np.mean([t[1].size for t in tests]):.0f} "
        "points each on average), all shuffled as a point cloud file would be. "
        f"ScanOrderSerializer recovers the exact scan order of every test sweep: "
        f"{recovered}. Load average at start: {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores; torch and numba use 1 thread, except the timed coding of E3 "
        "(2).",
    )
    report.add(
        "Notes",
        "E1 is calibrated with a GRU at 1,280 Adam steps (20 epochs at batch 32 over "
        "the 2,050 windows of 16 sweeps, lr 3e-3 cosine) plus the scalar prior-reflectance "
        "input (on by default here: `prior_scalar=True`). This run trains the "
        "paper's model, Mamba (mambapy's blocks; the training-time scan runs as a numba "
        "recurrence on the CPU), at that full schedule. To keep the run near half an hour "
        "on this shared 2-core machine, the GRU ablation is trained for 8 epochs (512 "
        "steps) instead of 20 and compared with the prototype's own 512-step figure (4.53); "
        "E2's random-order model gets E1's full 20 epochs, as its calibration "
        "requires. The default schedule (5 "
        "epochs at batch 64, lr 1e-3: 160 steps) is not rerun: the reference prototype measured "
        "it at the order-0 level (6.1 bpp). The paper's baselines (G-PCC RAHT/Predlift, "
        "Unicorn) are not available in Python; the peers are classical and general-purpose coders.",
    )
    log("peers")
    peer_bpp = peers(report, tests, scan_orders, quick)
    peer_t = peer_times(tests, scan_orders)
    log("E1")
    results = e1(report, train, tests, peer_bpp, configs)
    log("E3")
    e3(report, results["mamba"][0], tests, peer_t, quick)
    log("E2")
    e2(report, train, tests, results["mamba"][1], "mamba", e2_epochs)
    report.add(
        "Run",
        f"Total wall time {time.perf_counter() - start:.0f} s; load average at the end "
        f"{os.getloadavg()[0]:.1f}.",
    )
    report.write()


if __name__ == "__main__":
    main()
