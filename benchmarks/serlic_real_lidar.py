"""SerLiC on real airborne LiDAR intensity (laspy's PDAL / libLAS samples) and its peers.

Run: python benchmarks/serlic_real_lidar.py [--quick]

The codec is trained on the first half (in acquisition order) of the autzen_trim flight
line and tested on the second half and on the other sample files. Every coder codes the
intensity field alone; rates are bits per point (bpp) of the real coded size unless a
row says "entropy". Needs laspy's sdist in <sys.prefix>/share/sklearn_icml (make venv).
"""

import io
import lzma
import os
import sys
import tarfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _harness import Report, fmt, median_time, parse_args  # noqa: E402

from sklearn_icml.compression import (  # noqa: E402
    AdaptiveContextCodec,
    AirborneScanSerializer,
    SerLiCCodec,
)
from sklearn_icml.datasets import load_lidar_sample  # noqa: E402
from sklearn_icml.datasets._lidar import _SAMPLE_MEMBERS, _laspy_sdist  # noqa: E402

N_ANGLE_BINS = 180
TRAIN_FRACTION = 0.5
EPOCH_GRID = {False: (15, 30, 60), True: (1, 2)}
SERLIC = {"scanner": "airborne", "n_azimuth": N_ANGLE_BINS, "window": 256, "batch_size": 16,
          "learning_rate": 3e-3, "rho_scale": 10.0, "n_jobs": 1, "random_state": 0}


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def entropy(symbols):
    counts = np.bincount(symbols)
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum())


def raw_las(name):
    """The sample as laspy's LasData (for LASzip, which codes whole point records)."""
    import laspy

    with tarfile.open(_laspy_sdist(None), "r:gz") as tar:
        payload = tar.extractfile(f"laspy-2.7.0/tests/data/{_SAMPLE_MEMBERS[name]}").read()
    return laspy.read(io.BytesIO(payload))


def laszip_intensity(las, rows):
    """LASzip's bytes for the intensity of ``rows``: size(records) - size(intensity 0).

    The records keep every other field of the file (GPS time, returns, scan angle and
    direction, coordinates...), so the difference is what LASzip spends on intensity
    given the same side information the airborne codecs use. Returns (bytes, seconds to
    write the records with intensity, seconds to read them back).
    """
    import laspy

    part = laspy.LasData(las.header)
    part.points = las.points[rows].copy()

    def size(points):
        buf = io.BytesIO()
        out = laspy.LasData(las.header)
        out.points = points
        out.write(buf, do_compress=True, laz_backend=laspy.LazBackend.Lazrs)
        return buf.getvalue()

    t_enc, blob = median_time(lambda: size(part.points), repeat=3, warmup=0)
    zeroed = part.points.copy()
    zeroed.intensity[:] = 0
    blob0 = size(zeroed)
    t_dec, back = median_time(lambda: laspy.read(io.BytesIO(blob)), repeat=3, warmup=0)
    assert np.array_equal(np.asarray(back.intensity), np.asarray(part.intensity))
    return len(blob) - len(blob0), t_enc, t_dec


def general(name):
    import zstandard

    coders = {
        "lzma -9e": (lambda b: lzma.compress(b, preset=9 | lzma.PRESET_EXTREME), lzma.decompress),
        "zstd -22": (zstandard.ZstdCompressor(level=22).compress,
                     zstandard.ZstdDecompressor().decompress),
    }
    return coders[name]


def code_with(codec, points, r, repeat):
    """Coded bpp, encode and decode points/s (median times), exact round trip."""
    t_enc, blob = median_time(lambda: codec.encode((points, r)), repeat=repeat, warmup=0)
    t_dec, back = median_time(lambda: codec.decode(blob, points), repeat=repeat, warmup=0)
    n = r.shape[0]
    return 8 * len(blob) / n, n / t_enc, n / t_dec, bool(np.array_equal(back, r))


def peers_on(label, points, r, las, rows, ser, repeat):
    """Rows of the peers table for one test set (intensity already 8-bit or raw)."""
    order = ser.get_order(points)
    n = r.shape[0]
    width = 1 if r.dtype == np.uint8 else 2
    rows_out = [[label, "raw", 8.0 * width, "-", "-", "-", "0", "stored as is"]]
    rows_out.append([label, "order-0 (entropy)", entropy(r), "-", "-", "-", "0", ""])
    payload = np.ascontiguousarray(r[order]).tobytes()
    for name in ("lzma -9e", "zstd -22"):
        enc, dec = general(name)
        t_enc, blob = median_time(lambda enc=enc: enc(payload), repeat=repeat, warmup=0)
        t_dec, back = median_time(lambda dec=dec, blob=blob: dec(blob), repeat=repeat, warmup=0)
        rows_out.append([label, f"{name}, acquisition order", 8 * len(blob) / n, n / t_enc,
                         n / t_dec, back == payload, "0", f"{width}-byte values"])
    nbytes, t_enc, t_dec = laszip_intensity(las, rows)
    rows_out.append([label, "LASzip (lazrs)", 8 * nbytes / n, n / t_enc, n / t_dec, True, "0",
                     "size(records) - size(intensity 0); speeds are of whole records"])
    return rows_out


def main(argv=None):
    args = parse_args(__doc__.splitlines()[0], argv)
    quick = args.quick
    import torch

    torch.set_num_threads(1)
    report = Report(
        "serlic_real_lidar",
        "SerLiC on real airborne LiDAR intensity (laspy's PDAL / libLAS samples)",
        quick=quick,
        packages=("numpy", "torch", "mambapy", "constriction", "laspy", "lazrs", "zstandard"),
    )
    repeat = 1 if quick else 3
    start = time.perf_counter()

    autzen = load_lidar_sample("autzen_trim")
    ser = AirborneScanSerializer(n_angle_bins=N_ANGLE_BINS)
    order = ser.get_order(autzen.points)
    n_train = int(TRAIN_FRACTION * order.shape[0])
    train_rows, test_rows = np.sort(order[:n_train]), np.sort(order[n_train:])
    if quick:
        train_rows, test_rows = train_rows[:8000], test_rows[:8000]
    P, r = autzen.points, autzen.intensity
    train = (P[train_rows], r[train_rows])
    tests = {"autzen_trim, second half": (P[test_rows], r[test_rows], "autzen_trim", test_rows)}
    others = {}
    for name in ("plane", "vegetation_1_3"):
        d = load_lidar_sample(name)
        rows = np.arange(d.points.shape[0])
        if quick:
            rows = rows[:4000]
        tests[name] = (d.points[rows], d.intensity[rows], name, rows)
        others[name] = d
    bug = load_lidar_sample("append-bug", intensity="raw")

    report.add(
        "Setup",
        f"Data: laspy 2.7.0's sdist, `tests/data/` (read from the tarball). Training: the "
        f"first {TRAIN_FRACTION:.0%} of autzen_trim in acquisition order (GPS time, then "
        f"return number; {train[1].shape[0]} points, one flight line, 8-bit intensity). "
        f"Tests: the second half of the same flight line ({test_rows.shape[0]} points), "
        f"plane.laz ({tests['plane'][1].shape[0]} points, intensity stored as 8-bit x "
        f"{others['plane'].intensity_divisor}, single returns, scan angle 0), "
        f"vegetation_1_3.las ({tests['vegetation_1_3'][1].shape[0]} points, 8-bit x "
        f"{others['vegetation_1_3'].intensity_divisor}, not stored in GPS-time order) and "
        f"append-bug.laz ({bug.intensity.shape[0]} points, 4 flight lines, 9-bit intensity "
        f"{int(bug.intensity.min())}..{int(bug.intensity.max())}: the 8-bit codecs do not "
        "apply, peers only). The 8-bit values are the stored ones divided exactly by their "
        "common divisor (lossless). Serialisation: AirborneScanSerializer, the scanner's "
        "acquisition order; context tokens: beam class (number of returns, return number, "
        f"scan direction), scan-angle bin ({N_ANGLE_BINS} over -90..90 degrees) and the "
        "distance to the previous point. Every coder codes the intensity alone; lzma and "
        "zstd get the values in acquisition order. One thread everywhere; times are "
        f"medians of {repeat} runs. Budget: about 10 minutes of one core.",
    )

    # the number of epochs of each model is chosen on a validation split of the training
    # half (its last fifth, in acquisition order); the test sets play no part in it
    n_fit = int(0.8 * train[1].shape[0])
    sub, val = (train[0][:n_fit], train[1][:n_fit]), (train[0][n_fit:], train[1][n_fit:])
    choice_rows, chosen = [], {}
    for model in ("mamba", "gru"):
        scores = {}
        for ep in EPOCH_GRID[quick]:
            log(f"validation fit {model}, {ep} epochs")
            codec = SerLiCCodec(**SERLIC, sequence_model=model, max_epochs=ep).fit([sub])
            scores[ep] = codec.bits_per_point([val])
            choice_rows.append([model, ep, scores[ep]])
        chosen[model] = min(scores, key=scores.get)
    report.add_table(
        "Epochs chosen on a validation split",
        ["model", "epochs", "validation bpp (model cross-entropy)"],
        choice_rows,
        note=f"Fits on the first 80% of the training half ({n_fit} points), validation on "
        f"its last 20%. Chosen: Mamba {chosen['mamba']}, GRU {chosen['gru']} epochs; the "
        "random-order ablation uses Mamba's.",
    )

    # fit the codecs
    fitted = {}
    configs = {
        "SerLiC (Mamba)": dict(SERLIC, sequence_model="mamba", max_epochs=chosen["mamba"]),
        "SerLiC (GRU)": dict(SERLIC, sequence_model="gru", max_epochs=chosen["gru"]),
        "SerLiC (Mamba), random order": dict(
            SERLIC, sequence_model="mamba", max_epochs=chosen["mamba"], serialization="random"
        ),
    }
    fit_rows = []
    for name, params in configs.items():
        log(f"fit {name}")
        t0 = time.perf_counter()
        codec = SerLiCCodec(**params).fit([train])
        fit_s = time.perf_counter() - t0
        fitted[name] = codec
        fit_rows.append([name, codec.n_params_, codec.n_steps_, fit_s,
                         codec.train_bpp_[-1] if codec.train_bpp_ else float("nan")])
    fitted["AdaptiveContextCodec (order-1)"] = AdaptiveContextCodec(
        scanner="airborne", n_azimuth=N_ANGLE_BINS).fit([train])
    report.add_table(
        "Training (first half of autzen_trim)",
        ["codec", "parameters", "optimiser steps", "fit s", "last-epoch train bpp"],
        fit_rows,
        note="Batch 16 over the 256-point windows, Adam lr 3e-3 with a cosine decay, the "
        "epochs chosen above. AdaptiveContextCodec learns nothing (its order-1 tables adapt "
        "while coding: 257 x 256 counts).",
    )

    # code every test set
    rows = []
    summary = {}
    for label, (points, refl, name, idx) in tests.items():
        log(f"peers on {label}")
        las = raw_las(name)
        rows += peers_on(label, points, refl, las, idx, ser, repeat)
        for codec_name, codec in fitted.items():
            if "random" in codec_name and label != "autzen_trim, second half":
                continue
            log(f"{codec_name} on {label}")
            bpp, enc, dec, ok = code_with(codec, points, refl, repeat)
            params = getattr(codec, "n_params_", 0)
            rows.append([label, codec_name, bpp, enc, dec, ok, str(params), ""])
            summary[(label, codec_name)] = bpp
        for row in rows:
            if row[0] == label and isinstance(row[2], float):
                summary.setdefault((label, row[1]), row[2])
    log("peers on append-bug")
    bug_rows = np.arange(bug.intensity.shape[0])
    if quick:
        bug_rows = bug_rows[:4000]
    rows += peers_on("append-bug (9-bit)", bug.points[bug_rows], bug.intensity[bug_rows],
                     raw_las("append-bug"), bug_rows, ser, repeat)
    report.add_table(
        "Intensity coded alone: every coder, every test set",
        ["test set", "coder", "bpp", "encode points/s", "decode points/s", "lossless",
         "parameters", "note"],
        rows,
        note="bpp is the real coded size (the codecs' 48-byte header included). Speeds of "
        "LASzip are of writing / reading whole point records (all fields), so they are "
        "not comparable with the others'.",
    )

    main_set = "autzen_trim, second half"
    serlic = summary[(main_set, "SerLiC (Mamba)")]
    checks = [
        ["SerLiC (Mamba) vs lzma -9e, same flight", "SerLiC < lzma",
         f"{fmt(serlic)} vs {fmt(summary[(main_set, 'lzma -9e, acquisition order')])}"],
        ["SerLiC (Mamba) vs zstd -22, same flight", "SerLiC < zstd",
         f"{fmt(serlic)} vs {fmt(summary[(main_set, 'zstd -22, acquisition order')])}"],
        ["SerLiC (Mamba) vs LASzip, same flight", "SerLiC < LASzip",
         f"{fmt(serlic)} vs {fmt(summary[(main_set, 'LASzip (lazrs)')])}"],
        ["SerLiC (Mamba) vs adaptive order-1, same flight", "SerLiC < adaptive",
         f"{fmt(serlic)} vs {fmt(summary[(main_set, 'AdaptiveContextCodec (order-1)')])}"],
        ["acquisition order vs random order (Mamba)", "scan < random",
         f"{fmt(serlic)} vs {fmt(summary[(main_set, 'SerLiC (Mamba), random order')])}"],
    ]
    for name in ("plane", "vegetation_1_3"):
        best_peer = min(
            (v, k[1]) for k, v in summary.items()
            if k[0] == name and not k[1].startswith("SerLiC") and k[1] != "raw"
            and "entropy" not in k[1]
        )
        checks.append([f"SerLiC (Mamba) trained on autzen, tested on {name}",
                       "reported (another sensor)",
                       f"{fmt(summary[(name, 'SerLiC (Mamba)')])} vs best peer "
                       f"{best_peer[1]} {fmt(best_peer[0])}"])
    report.add_table("Summary (bits per point)", ["comparison", "claim", "measured"], checks)
    report.add(
        "Run",
        f"Total wall time {time.perf_counter() - start:.0f} s on one thread.",
    )
    report.write()


if __name__ == "__main__":
    main()
