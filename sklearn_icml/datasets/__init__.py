"""Data generators used by tests, benchmarks, examples and the demo tour.

Nothing here downloads anything: every generated set is made from a seed, and every real set
or model is read from an installed package (``load_*``), converted at most once into the data
home (``get_data_home``). One import line per method, tagged with the method's slug (a trailing
comment survives import sorting).
"""

from ._base import get_data_home
from ._cellflux import (  # cellflux-flow-matching
    make_batch_shift_1d,
    make_digits_screen,
    make_gaussian_perturbations,
)
from ._code import load_humaneval, load_python_source  # real code: language-model methods
from ._continual import (  # lwi-continual-learning
    load_permuted_digits,
    load_rotated_digits,
    load_split_digits,
)
from ._gam import make_additive_classification, make_additive_regression  # stump-forest-gam
from ._language_models import load_smollm2, make_tiny_causal_lm, smollm2_cache_folder
from ._lidar import load_lidar_sample, make_lidar_sweep, read_las  # serlic-reflectance-compression
from ._lora import make_lora_collection  # lora-joint-compression
from ._mas import make_arithmetic_queries  # mas-gpt
from ._movielens import load_movielens_bandit  # multi-agent-bai
from ._multiple_choice import make_multiple_choice_predictions  # capa-similarity
from ._multiview import make_multiview_counts  # ptib-clustering
from ._parity import make_streaming_parity, parity_targets  # streaming-parity-rnn
from ._video import (  # f16-high-frame-rate-video
    load_sample_videos,
    make_playback_tasks,
    make_rotating_dot_videos,
    read_video,
)
from ._weighting import make_markov_languages, make_mixed_source_regression  # data-weighting-model

__all__ = [
    "get_data_home",
    "load_humaneval",
    "load_python_source",
    "load_smollm2",
    "make_tiny_causal_lm",
    "smollm2_cache_folder",
    "load_movielens_bandit",
    "load_lidar_sample",
    "load_permuted_digits",
    "load_sample_videos",
    "load_rotated_digits",
    "load_split_digits",
    "make_additive_classification",
    "make_additive_regression",
    "make_arithmetic_queries",
    "make_batch_shift_1d",
    "make_digits_screen",
    "make_gaussian_perturbations",
    "make_lidar_sweep",
    "make_lora_collection",
    "make_markov_languages",
    "make_mixed_source_regression",
    "make_multiple_choice_predictions",
    "make_multiview_counts",
    "make_playback_tasks",
    "make_rotating_dot_videos",
    "make_streaming_parity",
    "parity_targets",
    "read_las",
    "read_video",
]
