"""F16VideoClassifier: frame-rate-aware video classification with the F-16 aligner (skorch)."""


import numpy as np
from scipy.special import softmax
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions, validate_parameter_constraints
from sklearn.utils.validation import check_is_fitted

from ..base import BaseNeuralEstimator, NeuralClassifierMixin, NonTabularInputMixin
from ..utils import optional_import
from ..utils._deprecation import (
    DEPRECATED,
    DEPRECATED_PARAM,
    keyword_only_after,
    renamed_param,
)
from ..utils._docstrings import fill_doc
from ..utils._param_validation import NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ..utils._skorch import encode_class_labels, torch_threads
from ._frames import check_fps, check_videos, encode_videos
from ._projector import check_pooled_grid, make_aligner, pad_to_clips, pool_tokens

torch = optional_import("torch", "neural")
skorch = optional_import("skorch", "neural")
nn = torch.nn


#: The estimator parameters that build :class:`F16VideoModule` (passed as ``module__*``).
_ARCHITECTURE = (
    "hidden_dim", "frames_per_clip", "aligner", "split_init", "pool_stride", "n_layers",
    "n_heads",
)


class F16VideoModule(nn.Module):
    """Aligner, spatial pooling and a small transformer (the LLM stand-in) with a CLS head.

    Input: encoded frame slots ``(B, n_clips * F, N, C)`` (one second per ``F`` slots).
    Per clip the aligner gives ``(N, H)`` tokens, pooled to ``N'``; a learned clip-index
    embedding (stand-in for the ``MM:SS`` time tokens) is added; a CLS token is prepended
    to all clip tokens; a pre-norm ``TransformerEncoder`` reads them and a linear head maps
    the CLS output to class logits.

    Parameters
    ----------
    in_dim : int
        Channels ``C`` of the frame tokens.
    grid : tuple of 2 ints
        Patch grid ``(gh, gw)`` with ``gh * gw = N``.
    n_classes : int
    max_clips : int
        Rows of the clip-index embedding (clips per video seen in ``fit``).
    hidden_dim, frames_per_clip, aligner, split_init, pool_stride, n_layers, n_heads
        As in :class:`F16VideoClassifier`, which holds their defaults (keyword-only).
    """

    def __init__(
        self, in_dim, grid, n_classes, max_clips, *, hidden_dim, frames_per_clip, aligner,
        split_init, pool_stride, n_layers, n_heads,
    ):
        super().__init__()
        self.grid = tuple(int(g) for g in grid)
        self.pool_stride = int(pool_stride)
        self.frames_per_clip = int(frames_per_clip)
        h = int(hidden_dim)
        self.aligner = make_aligner(aligner, in_dim, h, frames_per_clip, split_init)
        self.clip_embedding = nn.Parameter(torch.randn(int(max_clips), h) * 0.02)
        self.cls_token = nn.Parameter(torch.randn(h) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model=h, nhead=int(n_heads), dim_feedforward=4 * h, dropout=0.0,
            activation="gelu", batch_first=True, norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=int(n_layers),
                                             enable_nested_tensor=False)
        self.norm = nn.LayerNorm(h)
        self.head = nn.Linear(h, int(n_classes))

    def clip_tokens(self, x):
        """Aligned, pooled clip tokens ``(B, n_clips, N', H)`` (before the time embedding)."""
        y = self.aligner(x)
        return pool_tokens(y, self.grid, self.pool_stride)

    def forward(self, x):
        y = self.clip_tokens(x)
        b, nc, n, h = y.shape
        y = y + self.clip_embedding[:nc][None, :, None, :]
        tokens = torch.cat([self.cls_token.expand(b, 1, h), y.reshape(b, nc * n, h)], dim=1)
        out = self.encoder(tokens)
        return self.head(self.norm(out[:, 0]))


@fill_doc
class F16VideoClassifier(NonTabularInputMixin, NeuralClassifierMixin, BaseNeuralEstimator):
    """Video classifier that reads 16 frames per second through the F-16 clip aligner.

    A CPU-sized stand-in for F-16 (Li et al., ICML 2025): videos are sampled at ``fps``,
    every frame is encoded by a frozen patch encoder (``patch_size x patch_size`` patches,
    flattened: the stand-in for SigLIP), the frames of each one-second clip are compressed
    into one frame's worth of tokens by the multi-frame aligner
    (:class:`MultiFrameProjector`, split-initialised from a per-frame projector), pooled
    2 x 2, tagged with a learned clip-index embedding, and read by a small transformer
    (the stand-in for the LLM) whose CLS output is classified. Trained end to end with
    skorch (AdamW, cosine learning-rate schedule, cross-entropy).

    **Frame rates.** Frames are sampled from the native video with step
    ``max(round(native_fps / fps), 1)`` (so a 30-FPS video "at 16 FPS" keeps every 2nd
    frame: 15 effective FPS). A clip always covers one second: when ``fps`` is below
    ``frames_per_clip`` each sampled frame is repeated ``frames_per_clip / fps`` times in
    both ``fit`` and ``predict`` (this requires ``frames_per_clip %% fps == 0``). With
    ``inference_fps`` below ``fps`` the trained model is run on frames sampled at
    ``inference_fps``, each encoded frame repeated ``frames_per_clip / inference_fps``
    times (the paper's low-frame-rate decoding, without retraining): the encoder runs on
    ``fps / inference_fps`` times fewer frames and the number of tokens per second of video
    stays ``n_tokens_per_clip_`` whatever the rate.

    Parameters
    ----------
    fps : int, default=16
        Training frame rate; must divide ``frames_per_clip``.
    frames_per_clip : int, default=16
        Slots per one-second clip.
    patch_size : int, default=4
        Side of the encoder's square patches; must divide the frame height and width.
    hidden_dim : int, default=32
        Width ``H`` of the aligner output and of the transformer.
    aligner : {"multiframe", "meanpool", "single"}, default="multiframe"
        ``"multiframe"``: the F-16 aligner; ``"meanpool"``: the average of per-frame
        projections over the clip (order discarded); ``"single"``: the per-frame projection
        of the first frame of each clip (a 1-FPS model).
    split_init : bool, default=True
        Split-initialise the multi-frame aligner from a per-frame projector (else the
        default torch initialisation of its two linear layers).
    pool_stride : int, default=2
        Max-pool kernel and stride over the patch grid after projection (floor mode);
        1 disables pooling.
    n_layers : int, default=2
        Transformer layers.
    n_heads : int, default=4
        Attention heads; must divide ``hidden_dim``.
    max_epochs : int, default=30
    learning_rate : float, default=2e-3
        AdamW learning rate, annealed to 0 by a cosine schedule over ``max_epochs``.
    lr : float, default="deprecated"
        Deprecated name of ``learning_rate`` (removed in 0.4).
    batch_size : int, default=64
    weight_decay : float, default=0.01
        AdamW weight decay.
    %(device)s
    %(torch_n_jobs)s
    %(random_state)s
    %(verbose)s
    **kwargs
        Arguments prefixed ``module__``, ``optimizer__``, ``criterion__``,
        ``iterator_train__``, ``iterator_valid__`` or ``callbacks__``, routed to the skorch
        net as skorch routes them (e.g. ``optimizer__betas=(0.9, 0.98)``); they are
        parameters like the others (``get_params``, ``set_params``, ``clone``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    frame_shape_ : tuple
        ``(height, width)`` or ``(height, width, 3)`` of the training frames.
    n_features_in_ : int
        Pixel values per frame (``height * width * channels``).
    grid_ : tuple of 2 ints
        Patch grid ``(height / patch_size, width / patch_size)``.
    n_tokens_per_clip_ : int
        Tokens per second of video after pooling (the same at every frame rate).
    n_clips_ : int
        Clips (seconds) per training video; the clip-index embedding has this many rows,
        so longer videos are refused at prediction time.
    n_params_ : int
        Trainable parameters of the module.
    net_ : skorch.NeuralNetClassifier
    module_ : F16VideoModule
    history_ : skorch.History

    See Also
    --------
    F16ClipCompressor : the aligner alone, as a transformer.
    sklearn_icml.datasets.make_rotating_dot_videos : videos whose label needs 16 FPS.

    Notes
    -----
    In the paper the aligner feeds a 7B LLM fine-tuned with LoRA; here a two-layer
    transformer trained from scratch stands in for it, the SigLIP encoder is replaced by a
    parameter-free patch encoder, and the newline and ``MM:SS`` text tokens by a learned
    clip-index embedding (the pooled tokens of a clip carry no spatial position signal).
    After training, a clip of one repeated frame no longer maps to the single-frame
    projection (the split-init identity holds only at initialisation), so accuracy at a
    low ``inference_fps`` can drop even when every frame carries the label.

    References
    ----------
    .. [1] Y. Li, C. Tang, J. Zhuang, Y. Yang, G. Sun, W. Li, Z. Ma and C. Zhang,
       "Improving LLM Video Understanding with 16 Frames Per Second", ICML 2025,
       arXiv:2503.13956.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_rotating_dot_videos
    >>> from sklearn_icml.video import F16VideoClassifier
    >>> X, y = make_rotating_dot_videos(16, duration_s=1, size=8, random_state=0)
    >>> clf = F16VideoClassifier(hidden_dim=8, n_layers=1, n_heads=2, max_epochs=2,
    ...                          random_state=0).fit(X, y)
    >>> clf.n_tokens_per_clip_, clf.predict_proba(X, inference_fps=4).shape
    (1, (16, 2))
    """

    _parameter_constraints = {
        **BaseNeuralEstimator._parameter_constraints,
        "fps": [POSITIVE_INT],
        "frames_per_clip": [POSITIVE_INT],
        "patch_size": [POSITIVE_INT],
        "hidden_dim": [POSITIVE_INT],
        "aligner": [StrOptions({"multiframe", "meanpool", "single"})],
        "split_init": ["boolean"],
        "pool_stride": [POSITIVE_INT],
        "n_layers": [POSITIVE_INT],
        "n_heads": [POSITIVE_INT],
        "max_epochs": [POSITIVE_INT],
        "learning_rate": [POSITIVE_REAL],
        "lr": [POSITIVE_REAL, DEPRECATED_PARAM],
        "batch_size": [POSITIVE_INT],
        "weight_decay": [NON_NEGATIVE_REAL],
    }

    def __init__(
        self,
        *,
        fps=16,
        frames_per_clip=16,
        patch_size=4,
        hidden_dim=32,
        aligner="multiframe",
        split_init=True,
        pool_stride=2,
        n_layers=2,
        n_heads=4,
        max_epochs=30,
        learning_rate=2e-3,
        lr=DEPRECATED,
        batch_size=64,
        weight_decay=0.01,
        device="cpu",
        n_jobs=1,
        random_state=None,
        verbose=0,
        **kwargs,
    ):
        store_params(self, locals())

    # input
    def _validate_clip_layout(self):
        if self.frames_per_clip % self.fps:
            raise ValueError(
                f"fps={self.fps!r} must divide frames_per_clip={self.frames_per_clip!r}, so "
                "that each sampled frame is repeated a whole number of times and a clip "
                f"covers one second. Got fps={self.fps!r} instead."
            )
        if self.hidden_dim % self.n_heads:
            raise ValueError(
                f"n_heads must divide hidden_dim={self.hidden_dim!r}. Got "
                f"n_heads={self.n_heads!r} instead."
            )

    def _rate(self, inference_fps):
        if inference_fps is None:
            return self.fps
        validate_parameter_constraints(
            {"inference_fps": [POSITIVE_INT]},
            {"inference_fps": inference_fps},
            caller_name=f"{type(self).__name__}.predict",
        )
        if inference_fps > self.fps or self.fps % inference_fps:
            raise ValueError(
                f"inference_fps must divide the training fps={self.fps} (each frame is "
                f"repeated fps / inference_fps times). Got {inference_fps!r} instead."
            )
        return int(inference_fps)

    def _slots_of(self, X, native_fps, rate):
        """Encoded, padded frame slots ``(n, n_clips * F, N, C)`` of checked videos ``X``."""
        check_fps(
            native_fps, rate, "native_fps", "fps" if rate == self.fps else "inference_fps",
            caller_name=type(self).__name__,
        )
        slots = encode_videos(
            X, patch_size=self.patch_size, native_fps=native_fps, fps=rate,
            frames_per_clip=self.frames_per_clip,
        )
        return pad_to_clips(slots, self.frames_per_clip, "zeros")

    # fit
    @keyword_only_after(3)
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, native_fps=16):
        """Train on videos ``X`` sampled at ``fps``.

        Parameters
        ----------
        X : array-like of shape (n_videos, n_frames, height, width) or (..., 3)
            Raw videos (grayscale or colour), pixel values about [0, 1].
        y : array-like of shape (n_videos,)
            Class labels.
        native_fps : float, default=16
            Frame rate of ``X``; must be at least ``fps`` (no upsampling).

        Returns
        -------
        self : object
        """
        learning_rate = renamed_param(self, "lr", "learning_rate")
        self._validate_clip_layout()
        X_checked = check_videos(X)
        if len(y) != X_checked.shape[0]:
            raise ValueError(
                f"X and y must have the same number of videos ({X_checked.shape[0]}). Got "
                f"{len(y)} labels instead."
            )
        self.classes_, y_index = encode_class_labels(np.asarray(y))
        frame_shape = tuple(X_checked.shape[2:])
        p = self.patch_size
        h, w = frame_shape[:2]
        if h % p or w % p:
            raise ValueError(
                f"patch_size={p} must divide the frame height and width. Got frames of "
                f"{h} x {w} pixels instead."
            )
        grid = (h // p, w // p)
        gh, gw = check_pooled_grid(
            grid, self.pool_stride, kind="patch", remedy="pool_stride or patch_size"
        )
        slots = self._slots_of(X_checked, native_fps, self.fps)
        n_clips = slots.shape[1] // self.frames_per_clip
        self.frame_shape_ = frame_shape
        self.n_features_in_ = int(np.prod(frame_shape))
        self.grid_ = grid
        self.n_tokens_per_clip_ = int(gh * gw)
        self.n_clips_ = int(n_clips)
        self._fit_net(
            skorch.NeuralNetClassifier,
            slots,
            y_index,
            module=F16VideoModule,
            module__in_dim=slots.shape[3],
            module__grid=grid,
            module__n_classes=len(self.classes_),
            module__max_clips=n_clips,
            **{f"module__{name}": getattr(self, name) for name in _ARCHITECTURE},
            criterion=nn.CrossEntropyLoss,
            optimizer=torch.optim.AdamW,
            optimizer__weight_decay=self.weight_decay,
            lr=learning_rate,
            max_epochs=self.max_epochs,
            batch_size=self.batch_size,
            iterator_train__shuffle=True,
            callbacks=[
                (
                    "cosine",
                    skorch.callbacks.LRScheduler(
                        policy=torch.optim.lr_scheduler.CosineAnnealingLR,
                        T_max=self.max_epochs,
                    ),
                )
            ],
        )
        self.n_params_ = int(sum(p.numel() for p in self.module_.parameters() if p.requires_grad))
        return self

    # predict
    def _slots(self, X, native_fps, inference_fps):
        check_is_fitted(self)
        rate = self._rate(inference_fps)
        X = check_videos(X)
        if tuple(X.shape[2:]) != self.frame_shape_:
            raise ValueError(
                f"X has frames of shape {tuple(X.shape[2:])}, but F16VideoClassifier was "
                f"fitted on frames of shape {self.frame_shape_}. Got X of shape {X.shape} "
                "instead."
            )
        slots = self._slots_of(X, native_fps, rate)
        n_clips = slots.shape[1] // self.frames_per_clip
        if n_clips > self.n_clips_:
            raise ValueError(
                f"X has videos of {n_clips} one-second clips, but the clip-index embedding "
                f"was trained on videos of {self.n_clips_} clips; give videos of at most "
                f"{self.n_clips_} s. Got X of shape {np.shape(X)} instead."
            )
        return slots

    def _predict_logits(self, X, native_fps=16, inference_fps=None):
        slots = self._slots(X, native_fps, inference_fps)
        with torch_threads(self.n_jobs):
            logits = self.net_.forward(slots, training=False)
        return logits.numpy().astype(np.float64)

    @keyword_only_after(2)
    def predict_proba(self, X, *, native_fps=16, inference_fps=None):
        """Class probabilities: the softmax of the logits.

        Parameters
        ----------
        X : array-like of shape (n_videos, n_frames, height, width) or (..., 3)
            Frames of the training shape; at most ``n_clips_`` seconds long.
        native_fps : float, default=16
            Frame rate of ``X``.
        inference_fps : int or None, default=None
            Frame rate at which to read ``X``; must divide ``fps``. None reads at ``fps``.

        Returns
        -------
        proba : ndarray of shape (n_videos, n_classes)
        """
        return softmax(self._predict_logits(X, native_fps, inference_fps), axis=1)

    @keyword_only_after(2)
    def predict(self, X, *, native_fps=16, inference_fps=None):
        """Predicted class of each video (see :meth:`predict_proba` for the parameters).

        Returns
        -------
        y_pred : ndarray of shape (n_videos,)
        """
        logits = self._predict_logits(X, native_fps, inference_fps)
        return self.classes_[np.argmax(logits, axis=1)]

    @keyword_only_after(4)
    def score(self, X, y, sample_weight=None, *, native_fps=16, inference_fps=None):
        """Accuracy on ``(X, y)`` (see :meth:`predict_proba` for the parameters).

        Returns
        -------
        score : float
        """
        from sklearn.metrics import accuracy_score

        y_pred = self.predict(X, native_fps=native_fps, inference_fps=inference_fps)
        return float(accuracy_score(y, y_pred, sample_weight=sample_weight))

    @keyword_only_after(2)
    def clip_tokens(self, X, *, native_fps=16, inference_fps=None):
        """The aligned, pooled tokens the sequence model reads (before the time embedding).

        Returns
        -------
        tokens : ndarray of shape (n_videos, n_clips, n_tokens_per_clip_, hidden_dim)
        """
        slots = self._slots(X, native_fps, inference_fps)
        module = self.module_
        was_training = module.training
        module.eval()
        try:
            with torch.no_grad(), torch_threads(self.n_jobs):
                x = torch.from_numpy(slots).to(self.net_.device)
                return module.clip_tokens(x).cpu().numpy()
        finally:
            module.train(was_training)
