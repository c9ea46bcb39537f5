"""Demo: SerLiC codes LiDAR reflectance losslessly below lzma (small generated sweeps)."""

from . import register_demo


@register_demo(
    "SerLiCCodec",
    what="Mamba codec trained 160 steps on 4 small generated sweeps; lossless round trip "
    "of a new sweep, rate vs lzma and the adaptive order-1 coder",
    budget_s=30,
)
def demo():
    import lzma

    import numpy as np

    from sklearn_icml.compression import AdaptiveContextCodec, ScanOrderSerializer, SerLiCCodec
    from sklearn_icml.datasets import make_lidar_sweep

    grid = {"n_lasers": 16, "n_azimuth": 256}
    train = [make_lidar_sweep(random_state=s, **grid)[:2] for s in range(4)]
    points, r, oracle, _ = make_lidar_sweep(random_state=1000, **grid)
    codec = SerLiCCodec(**grid, window=128, max_epochs=10, batch_size=8, learning_rate=6e-3,
                        random_state=0)
    codec.fit(train)
    blob = codec.encode((points, r))
    lossless = bool(np.array_equal(codec.decode(blob, points), r))
    order = ScanOrderSerializer(**grid).get_order(points)
    lz = lzma.compress(r[order].tobytes(), preset=9 | lzma.PRESET_EXTREME)
    adaptive = AdaptiveContextCodec(**grid).fit(train)
    return {
        "points": int(r.size),
        "SerLiC bpp": 8 * len(blob) / r.size,
        "lzma (scan order) bpp": 8 * len(lz) / r.size,
        "adaptive order-1 bpp": 8 * len(adaptive.encode((points, r))) / r.size,
        "oracle bpp": float(oracle.mean()),
        "lossless": lossless,
    }
