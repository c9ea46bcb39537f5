"""Differential privacy: stratified sampling designs and amplification by partitioning."""

# Names that need torch are imported lazily (see __getattr__) and listed in _TORCH_NAMES,
# so that `import sklearn_icml.privacy` stays numpy-only.
from ..utils._lazy import lazy_getattr

_TORCH_NAMES = set()

__all__ = []

# --- dp-stratified-sampling ---
from ._allocation import (  # noqa: E402
    design_variance,
    neyman_allocation,
    optimal_allocation,
    proportional_allocation,
)
from ._amplification import amplified_epsilon, nominal_epsilon  # noqa: E402
from ._dp_stratified import DPStratifiedSampler  # noqa: E402
from ._mechanisms import (  # noqa: E402
    discrete_laplace_mechanism,
    laplace_mechanism,
    mechanism_log_density,
    mechanism_variance,
    tulap_mechanism,
)

__all__ += [
    "DPStratifiedSampler",
    "amplified_epsilon",
    "design_variance",
    "discrete_laplace_mechanism",
    "laplace_mechanism",
    "mechanism_log_density",
    "mechanism_variance",
    "neyman_allocation",
    "nominal_epsilon",
    "optimal_allocation",
    "proportional_allocation",
    "tulap_mechanism",
]

# --- privacy-amplification-partitioning ---
from ._noise_calibration import find_noise_multiplier  # noqa: E402
from ._partition_accountant import PartitionRDPAccountant  # noqa: E402
from ._partition_rdp import (  # noqa: E402
    bis_epsilon,
    bis_rdp,
    default_orders,
    dropout_rdp,
    model_split_rdp,
    poisson_rdp,
    rdp_to_epsilon,
)
from ._partition_samplers import (  # noqa: E402
    BalancedIterationSampler,
    PoissonIterationSampler,
)

_TORCH_NAMES |= {"DPSGDClassifier"}
__all__ += [
    "BalancedIterationSampler",
    "DPSGDClassifier",
    "PartitionRDPAccountant",
    "PoissonIterationSampler",
    "bis_epsilon",
    "bis_rdp",
    "default_orders",
    "dropout_rdp",
    "find_noise_multiplier",
    "model_split_rdp",
    "poisson_rdp",
    "rdp_to_epsilon",
]

# torch-based names are imported on first access only
__getattr__ = lazy_getattr(__name__, {"DPSGDClassifier": "._dpsgd"})
