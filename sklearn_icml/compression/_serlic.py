"""SerLiCCodec: learned lossless LiDAR reflectance coding in scan order (Zhu et al., 2025)."""

import numbers

import numpy as np
from sklearn.utils._param_validation import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils.validation import check_is_fitted

from ..base import BaseNeuralEstimator
from ..utils import check_random_state, draw_seed, optional_import
from ..utils._deprecation import (
    DEPRECATED,
    DEPRECATED_PARAM,
    REMOVED_IN,
    deprecated,
    renamed_param,
)
from ..utils._param_validation import N_JOBS, NON_NEGATIVE_INT, POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ..utils._progress import Progress
from ..utils._skorch import torch_threads
from ..utils._training import run_epochs, seeded_torch
from ..utils.validation import check_fits_dtype
from . import _bitstream
from ._base import _BaseReflectanceCodec
from ._model import SerLiCNet, bits_loss
from ._serialization import START_SYMBOL

torch = optional_import("torch", "neural")

# windows per forward pass in score / bits_per_point
_SCORE_BATCH = 256

#: Layer sizes that give the codec about 111K trainable parameters, the size of the
#: paper's light model (see the Notes of SerLiCCodec).
_ABOUT_111K_PARAMETERS = {"d_model": 64, "n_layers": 2, "d_state": 16, "d_emb": 32}


def _pmf(logits, prob_floor):
    """Coding PMF from float32 logits: floored softmax in float64, returned as float32.

    Encoder and decoder call this on bit-identical logits, so they hand the range coder
    bit-identical probabilities.
    """
    if not np.all(np.isfinite(logits)):
        raise ValueError(
            "the model's logits are not finite on these points, so no coding distribution "
            "exists; the points are far outside the distances the codec was fitted on (or "
            "the fit diverged). Rescale the geometry or raise rho_scale. Got non-finite "
            "logits instead."
        )
    x = logits.astype(np.float64)
    x -= x.max(axis=1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=1, keepdims=True)
    x *= 1.0 - 256 * prob_floor
    x += prob_floor
    return x.astype(np.float32)


def _floored_bits(logits, target, prob_floor):
    """Bits of ``target`` under the same floored PMF as :func:`_pmf` (float64)."""
    x = logits.astype(np.float64)
    x -= x.max(axis=-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=-1, keepdims=True)
    p = np.take_along_axis(x, target[..., None], axis=-1)[..., 0]
    return -np.log2((1.0 - 256 * prob_floor) * p + prob_floor)


def _window_targets(w, refl_kept=None):
    """Reflectance of every slot of the windows ``w`` (0 at padding, or everywhere when
    ``refl_kept`` is None): int64 of shape ``(n_windows, window)``."""
    r = np.zeros(w.index.shape, dtype=np.int64)
    if refl_kept is not None:
        r[w.mask] = refl_kept[w.index[w.mask]]
    return r


class SerLiCCodec(_BaseReflectanceCodec):
    """Learned lossless LiDAR reflectance codec: scan-order serialisation + Mamba + range coder.

    SerLiC (Zhu et al., ICML 2025) codes the integer reflectance (intensity) of a LiDAR
    sweep whose geometry the decoder already has. The points are put back in the order
    the sensor scanned them (:class:`ScanOrderSerializer`: laser by laser, then by
    azimuth), each laser's sequence is cut into windows of ``window`` points, and a small
    causal sequence model reads, for each point, a token made of its laser and azimuth
    indices, its distance and the previous reflectance of the window; it outputs a
    256-way probability mass function that drives ``constriction``'s range coder.
    Windows are independent, so the encoder and decoder process all windows of a sweep
    as one batch; the decoder runs the model in recurrent (step) mode, one position per
    call.

    Encoding runs the same step function as decoding, so both hand the coder
    bit-identical probabilities; the header of the bytes carries the model fingerprint and
    a CRC-32 of the values, and :meth:`decode` raises instead of returning wrong values.

    Parameters
    ----------
    n_lasers, n_azimuth, elevation_range
        The scan grid (laser beams, azimuth bins per revolution, beam elevations in
        degrees or ``"auto"``), as in :class:`ScanOrderSerializer`; defaults ``32``,
        ``1024``, ``(-25.0, 3.0)``.
    window : int, default=256
        Points per window (a window never spans two lasers). :meth:`encode` and
        :meth:`bits_per_point` may use another length (keyword ``window``); the bytes
        record it.
    sequence_model : {"mamba", "gru"}, default="mamba"
        Mamba blocks (``mambapy``, pure PyTorch) as in the paper, or a GRU (ablation).
    d_emb : int, default=16
        Width of the embeddings and of the distance MLP.
    d_model : int, default=32
        Width of the sequence model.
    n_layers : int, default=2
        Number of Mamba blocks (or GRU layers).
    d_state : int, default=8
        State size of each Mamba channel.
    expand : int, default=2
        Mamba's expansion factor (inner width ``expand * d_model``).
    rho_scale : float, default=100.0
        Distances are divided by this before the distance MLP (metres).
    prior_scalar : bool, default=True
        Also feed the previous reflectance as the scalar ``r_prev / 255`` and a
        start-of-window flag to the distance MLP (see Notes: without it a light model
        needs far more steps to use the previous value).
    serialization : {"scan", "random"}, default="scan"
        Coding order: the scan order, or a fixed pseudo-random order (the paper's
        serialisation ablation; windows then cut one sequence of all points).
    scanner : {"spinning", "airborne"}, default="spinning"
        The sensor, which decides what ``points`` are and the scan order. ``"spinning"``:
        points of shape (n, 3), ordered by laser and azimuth
        (:class:`ScanOrderSerializer`). ``"airborne"``: pulse arrays of shape (n, 8)
        (x, y, z, GPS time, scan angle, scan direction, return number, number of
        returns; :func:`sklearn_icml.datasets.read_las` reads them), coded in acquisition
        order as one sequence (:class:`AirborneScanSerializer`); ``n_azimuth`` is then
        the number of scan-angle bins and ``n_lasers`` and ``elevation_range`` are not
        used.
    max_epochs : int, default=5
        Passes over the training windows. 0 leaves the model untrained. About 1,000
        optimiser steps are needed to reach the rates of the benchmark (e.g. 20 epochs
        at ``batch_size=32`` on 16 sweeps); the defaults are a light schedule.
    batch_size : int, default=64
        Windows per optimiser step.
    learning_rate : float, default=1e-3
        Adam learning rate, decayed to 0 with a cosine schedule.
    lr : float, default="deprecated"
        Deprecated name of ``learning_rate`` (removed in 0.4).
    prob_floor : float, default=1e-6
        Probability mixed into every symbol, ``P = (1 - 256 eps) softmax + eps``, so no
        symbol has zero probability.
    float_reflectance : {"reject", "scale255"}, default="reject"
        How float reflectance is taken: whole numbers only, or floats in [0, 1] mapped
        with ``round(255 * r)`` (KITTI style).
    drop_origin : bool, default=False
        Accept points at the sensor origin (elevation undefined): they are left out of
        the model and their reflectance is stored raw (8 bits each).
    n_jobs : int, default=1
        Number of CPU workers: torch threads during fit and coding (``None`` means 1 unless
        in a :func:`joblib.parallel_config` context; -1 every core). Decode with the same
        number as encode: the probabilities must be bit-identical.
    device : str, default="cpu"
        Device for training (``"cuda"`` if available); coding always runs on the CPU.
    random_state : int, RandomState instance or None, default=None
        Seeds the weight initialisation and the order of training windows.
    verbose : int, default=0
        Print one line per epoch when > 0.

    Attributes
    ----------
    serializer_ : ScanOrderSerializer or AirborneScanSerializer
        The fitted serialiser (of the ``scanner``).
    module_ : torch.nn.Module
        The trained network (on the CPU, in eval mode).
    n_params_ : int
        Number of trainable parameters.
    train_bpp_ : list of float
        Mean training bits per point of each epoch.
    n_steps_ : int
        Number of optimiser steps taken.
    fingerprint_ : str
        SHA-256 (hex) of the weights and the settings that change the probabilities;
        every blob records its first 16 bytes.
    n_features_in_ : int
        Always 4 (x, y, z, reflectance).

    See Also
    --------
    ScanOrderSerializer : the serialisation.
    AdaptiveContextCodec : the classical adaptive order-1 baseline.

    Notes
    -----
    The coding probabilities depend on float arithmetic: decode on a machine, torch
    version and ``n_jobs`` that compute the same floats as the encoder did. If they
    do not, :meth:`decode` raises (CRC-32 mismatch); it never returns wrong values.

    Where the library departs from or fills in the paper [1]_: the previous reflectance
    also enters as a scalar with a start-of-window flag (``prior_scalar``), which lets a
    light model learn to use it in far fewer steps; the PMF is floored
    (``prob_floor``) so that no symbol has zero probability. The paper gives the parameter
    count of its light model (about 111K) but not every layer's shape: with the Mamba
    sequence model, ``d_model=64, n_layers=2, d_state=16, d_emb=32`` reach that count
    (the defaults are smaller, for a fast fit).

    The network is trained by its own loop rather than through skorch: a training
    example is a window of six aligned arrays with a padding mask, the loss is the
    mask-weighted bits per point, and the window order is drawn from ``random_state``'s
    numpy stream (a skorch DataLoader would draw it from torch's, changing every trained
    model); the frame around the steps (the :func:`~sklearn_icml.utils.draw_seed` seed,
    the torch threads, the epochs and the divergence check) is the one of the other
    estimators with their own loop, ``sklearn_icml.utils._training``.

    References
    ----------
    .. [1] J. Zhu, K. You, D. Ding and Z. Ma, "Efficient LiDAR Reflectance Compression via
       Scanning Serialization", ICML 2025, arXiv:2505.09433.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.compression import SerLiCCodec
    >>> from sklearn_icml.datasets import make_lidar_sweep
    >>> sweeps = [make_lidar_sweep(random_state=s, n_lasers=8, n_azimuth=128)[:2]
    ...           for s in range(3)]
    >>> codec = SerLiCCodec(n_lasers=8, n_azimuth=128, window=64, sequence_model="gru",
    ...                     max_epochs=2, learning_rate=1e-2, random_state=0).fit(sweeps[:2])
    >>> points, r = sweeps[2]
    >>> blob = codec.encode((points, r))
    >>> bool(np.array_equal(codec.decode(blob, points), r))
    True
    >>> bpp = codec.bits_per_point([(points, r)])  # the model's cross-entropy
    >>> bool(8 * len(blob) <= 1.005 * bpp * len(r) + 8 * 64)  # coded size: + 48-byte header
    True
    """

    _kind = _bitstream.KIND_SERLIC

    _parameter_constraints = {
        **_BaseReflectanceCodec._parameter_constraints,
        **BaseNeuralEstimator._parameter_constraints,  # device, n_jobs, random_state, verbose
        "window": [POSITIVE_INT],
        "sequence_model": [StrOptions({"mamba", "gru"})],
        "d_emb": [POSITIVE_INT],
        "d_model": [POSITIVE_INT],
        "n_layers": [POSITIVE_INT],
        "d_state": [POSITIVE_INT],
        "expand": [POSITIVE_INT],
        "rho_scale": [POSITIVE_REAL],
        "prior_scalar": ["boolean"],
        "max_epochs": [NON_NEGATIVE_INT],
        "batch_size": [POSITIVE_INT],
        "learning_rate": [POSITIVE_REAL],
        "lr": [POSITIVE_REAL, DEPRECATED_PARAM],
        "prob_floor": [Interval(numbers.Real, 0, 1 / 256, closed="neither")],
        # not None: decoding must run on the thread count the encoder ran on
        "n_jobs": N_JOBS,
    }

    def __init__(
        self,
        *,
        n_lasers=32,
        n_azimuth=1024,
        elevation_range=(-25.0, 3.0),
        window=256,
        sequence_model="mamba",
        d_emb=16,
        d_model=32,
        n_layers=2,
        d_state=8,
        expand=2,
        rho_scale=100.0,
        prior_scalar=True,
        serialization="scan",
        scanner="spinning",
        max_epochs=5,
        batch_size=64,
        learning_rate=1e-3,
        lr=DEPRECATED,
        prob_floor=1e-6,
        float_reflectance="reject",
        drop_origin=False,
        n_jobs=1,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        store_params(self, locals())

    @classmethod
    @deprecated(
        f"SerLiCCodec.paper_light is deprecated in 0.3 and will be removed in {REMOVED_IN}; "
        "pass the sizes it set instead: SerLiCCodec("
        + ", ".join(f"{k}={v}" for k, v in _ABOUT_111K_PARAMETERS.items())
        + ", ...)."
    )
    def paper_light(cls, **params):
        """Deprecated: pass ``d_model=64, n_layers=2, d_state=16, d_emb=32`` instead.

        The codec with the layer sizes of about 111K parameters (see Notes); removed in
        0.4. Other parameters are passed on.
        """
        return cls(**{**_ABOUT_111K_PARAMETERS, **params})

    # windows as tensors
    def _window_arrays(self, prep, refl_kept, window):
        """(v, u, rho, r, r_prev, mask) arrays of shape (n_windows, window)."""
        w = self._windows(prep, window)
        r = _window_targets(w, refl_kept)
        r_prev = np.empty_like(r)
        r_prev[:, 0] = START_SYMBOL
        r_prev[:, 1:] = r[:, :-1]
        return w, w.v, w.u, self._scaled_rho(w), r, r_prev, w.mask

    def _scaled_rho(self, w):
        """Distances of the window slots as the network reads them (float32)."""
        scaled = w.rho / float(self.rho_scale)
        check_fits_dtype(
            scaled, "points (their distances / rho_scale)", np.float32, estimator=self,
            advice="Remove or rescale the far points, or raise rho_scale",
        )
        return scaled.astype(np.float32)

    def _build_module(self):
        return SerLiCNet(
            n_lasers=self._grid()[0],
            n_azimuth=self._grid()[1],
            d_emb=self.d_emb,
            d_model=self.d_model,
            n_layers=self.n_layers,
            d_state=self.d_state,
            expand=self.expand,
            sequence_model=self.sequence_model,
            prior_scalar=self.prior_scalar,
        )

    # fit
    def _fit_model(self, sweeps):
        """Train the network on the windows of ``sweeps`` with the bits-per-point loss."""
        parts = []
        for points, refl in sweeps:
            prep = self._prepare(points)
            if prep.order.shape[0]:
                parts.append(self._window_arrays(prep, refl[prep.keep], int(self.window))[1:])
        V, U, RHO, R, RPREV, MASK = (np.concatenate(a) for a in zip(*parts))
        n_windows = V.shape[0]
        learning_rate = float(renamed_param(self, "lr", "learning_rate"))
        rng = check_random_state(self.random_state)
        seed = draw_seed(rng)
        batch = int(self.batch_size)
        total = -(-n_windows // batch) * int(self.max_epochs)
        self.train_bpp_ = []
        self.n_steps_ = total
        with seeded_torch(seed, self.device, self.n_jobs) as device:
            module = self._build_module().to(device)
            tensors = [
                torch.from_numpy(np.ascontiguousarray(a)).to(device)
                for a in (V, U, RHO, R, RPREV, MASK)
            ]
            if total:
                optimizer = torch.optim.Adam(module.parameters(), lr=learning_rate)
                scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total)
                module.train()
                self._train(module, optimizer, scheduler, tensors, rng, device)
        self.module_ = module.to("cpu").eval()
        self.n_params_ = int(sum(p.numel() for p in self.module_.parameters()))
        self.fingerprint_ = self._compute_fingerprint(
            (name, t.detach().numpy()) for name, t in sorted(self.module_.state_dict().items())
        )

    def _train(self, module, optimizer, scheduler, tensors, rng, device):
        """``max_epochs`` passes over the windows in a fresh order from ``rng`` each.

        An epoch's ``train_bpp_`` is its bits over its real points; run_epochs' own mean
        (over windows, padded or not) only guards against divergence.
        """
        floor = float(self.prob_floor)
        sums = [0.0, 0.0]  # bits and real points of the epoch so far
        progress = Progress(type(self).__name__, self.verbose, total=self.max_epochs)

        def step(indices):
            idx = torch.from_numpy(indices).to(device)
            v, u, rho, r, r_prev, mask = (t[idx] for t in tensors)
            loss = bits_loss(module(v, u, rho, r_prev), r, mask, floor)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            value, n_real = loss.item(), float(mask.sum())
            sums[0] += value * n_real
            sums[1] += n_real
            return value

        def end_epoch(epoch, loss):
            self.train_bpp_.append(sums[0] / sums[1])
            sums[:] = [0.0, 0.0]
            progress.step(f"epoch {epoch + 1}/{self.max_epochs}", train_bpp=self.train_bpp_[-1])

        with progress:
            run_epochs(
                step, tensors[0].shape[0], batch_size=int(self.batch_size),
                max_epochs=self.max_epochs, permutation=rng.permutation, end_epoch=end_epoch,
            )

    def _config(self):
        config = super()._config()
        config.update(
            rho_scale=float(self.rho_scale),
            prob_floor=float(self.prob_floor),
            sequence_model=self.sequence_model,
            prior_scalar=bool(self.prior_scalar),
            sizes=[self.d_emb, self.d_model, self.n_layers, self.d_state, self.expand],
        )
        return config

    # score
    def _model_bits(self, prep, refl_kept, window=None):
        window = int(self.window if window is None else window)
        w, v, u, rho, r, r_prev, mask = self._window_arrays(prep, refl_kept, window)
        bits = np.empty(w.index.shape)
        with torch.inference_mode(), torch_threads(self.n_jobs):
            for lo in range(0, v.shape[0], _SCORE_BATCH):
                sl = slice(lo, lo + _SCORE_BATCH)
                logits = self.module_(*(torch.from_numpy(a[sl]) for a in (v, u, rho, r_prev)))
                bits[sl] = _floored_bits(logits.numpy(), r[sl], float(self.prob_floor))
        out = np.empty(refl_kept.shape[0])
        out[w.index[mask]] = bits[mask]
        return out

    def bits_per_point(self, X, *, window=None):
        """Model cross-entropy in bits per point over all given sweeps (no coding).

        Parameters
        ----------
        X : list of (points, reflectance) or array of shape (n_points, 4)
            Sweeps in any of the forms :meth:`fit` accepts.
        window : int, default=None
            Window length to evaluate at (default: the ``window`` parameter).

        Returns
        -------
        bpp : float
            Total ideal code length over the total number of points; the coded size
            ``8 * len(encode(...)) / n`` agrees to within a few bytes.
        """
        return self._bits_per_point(X, self._check_window(window))

    def _check_window(self, window):
        """The window to code or score with: ``window``, or the parameter when None."""
        validate_parameter_constraints(
            {"window": [POSITIVE_INT, None]}, {"window": window}, caller_name=type(self).__name__
        )
        return int(self.window if window is None else window)

    # coding
    def encode(self, X, *, window=None):
        """Encode the reflectance of one sweep losslessly, given its geometry.

        Parameters
        ----------
        X : (points, reflectance) pair or array of shape (n_points, 4)
            One sweep; the decoder must be given the same ``points`` (same order).
        window : int, default=None
            Window length to code with (default: the ``window`` parameter); recorded in
            the bytes.

        Returns
        -------
        data : bytes
            Header (point count, sensor grid, window, model fingerprint, CRC-32 of the
            reflectance), raw values of origin points, then the range coder's words.
        """
        check_is_fitted(self)
        return bytes(self._encode(X, window=self._check_window(window)))

    def _coding_loop(self, w, on_step):
        """Run the network in step mode over all windows; ``on_step`` codes each step.

        ``on_step(t, active, pmf)`` receives the rows of the windows that have a point
        at position ``t`` and their float32 PMFs, and returns those points' symbols. The
        encoder and the decoder both go through this function, so the PMFs they see are
        computed by the same operations on the same inputs.
        """
        n_windows, window = w.index.shape
        v = torch.from_numpy(np.ascontiguousarray(w.v))
        u = torch.from_numpy(np.ascontiguousarray(w.u))
        rho = torch.from_numpy(self._scaled_rho(w))
        prev = torch.full((n_windows,), START_SYMBOL, dtype=torch.int64)
        floor = float(self.prob_floor)
        with torch.inference_mode(), torch_threads(self.n_jobs):
            state = self.module_.init_state(n_windows)
            for t in range(window):
                active = w.mask[:, t]
                if not active.any():
                    break  # padding only ends windows: no later position is real
                logits, state = self.module_.step(v[:, t], u[:, t], rho[:, t], prev, state)
                pmf = _pmf(logits.numpy()[active], floor)
                symbols = on_step(t, active, pmf)
                current = np.zeros(n_windows, dtype=np.int64)
                current[active] = symbols
                prev = torch.from_numpy(current)

    def _encode_symbols(self, prep, refl_kept, window):
        constriction = optional_import("constriction", "compression")
        w = self._windows(prep, window)
        r = _window_targets(w, refl_kept)
        family = constriction.stream.model.Categorical(perfect=False)
        encoder = constriction.stream.queue.RangeEncoder()

        def on_step(t, active, pmf):
            symbols = r[active, t]
            encoder.encode(symbols.astype(np.int32), family, pmf)
            return symbols

        self._coding_loop(w, on_step)
        return encoder.get_compressed()

    def _decode_symbols(self, prep, words, header):
        constriction = optional_import("constriction", "compression")
        if header.window < 1:
            raise ValueError(f"blob records window={header.window}; it is corrupted.")
        w = self._windows(prep, header.window)
        r = _window_targets(w)
        family = constriction.stream.model.Categorical(perfect=False)
        decoder = constriction.stream.queue.RangeDecoder(words)

        def on_step(t, active, pmf):
            symbols = np.asarray(decoder.decode(family, pmf), dtype=np.int64)
            r[active, t] = symbols
            return symbols

        self._coding_loop(w, on_step)
        out = np.empty(prep.order.shape[0], dtype=np.int64)
        out[w.index[w.mask]] = r[w.mask]
        if out.min() < 0 or out.max() > 255:
            raise ValueError("blob decodes to symbols outside 0..255; it is corrupted.")
        return out.astype(np.uint8)

    def _coding_pmfs(self, points, reflectance, *, window=None):
        """Step-mode PMFs of every window (for tests): float32 (n_windows, window, 256)."""
        check_is_fitted(self)
        points = np.asarray(points, dtype=np.float64)
        refl = np.asarray(reflectance).astype(np.int64)
        prep = self._prepare(points)
        w = self._windows(prep, self._check_window(window))
        r = _window_targets(w, refl[prep.keep])
        out = np.zeros((*w.index.shape, 256), dtype=np.float32)

        def on_step(t, active, pmf):
            out[active, t] = pmf
            return r[active, t]

        self._coding_loop(w, on_step)
        return w, out
