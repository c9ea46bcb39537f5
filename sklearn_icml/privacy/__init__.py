"""Differential privacy: stratified sampling designs and amplification by partitioning.

Two methods, one module per concept:

* Chen, Pasupathy & Awan, "Optimal Survey Design for Private Mean Estimation" (ICML 2025):
  :class:`DPStratifiedSampler` (``_dp_stratified``); the design variance and the
  optimal, Neyman and proportional allocations (``_allocation``, with the exact integer
  solvers of ``_allocation_search``); amplification by sampling without replacement
  (``_amplification``); the Laplace, discrete Laplace and Tulap mechanisms
  (``_mechanisms``).
* Dong, Chen & Ozgur, "Leveraging Randomness in Model and Data Partitioning for Privacy
  Amplification" (ICML 2025): the RDP of balanced iteration subsampling, model splitting
  and dropout (``_partition_rdp``, formulas in ``_rdp_kernels``);
  :class:`PartitionRDPAccountant` (``_partition_accountant``); noise calibration
  (``_noise_calibration``); the batch samplers (``_partition_samplers``) and
  :class:`DPSGDClassifier` (``_dpsgd``, its skorch net and DP-SGD step in
  ``_dpsgd_net``; both need the ``neural`` extra).
"""

# Names that need torch are imported lazily (see __getattr__) and listed in _TORCH_NAMES,
# so that `import sklearn_icml.privacy` stays numpy-only.
from ..utils._lazy import lazy_module

_TORCH_NAMES = set()

__all__ = []

# optimal survey design for private mean estimation (Chen, Pasupathy & Awan)
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

# privacy amplification by model and data partitioning (Dong, Chen & Ozgur)
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

# torch-based names are imported on first access only; ``__all__`` is answered by
# __getattr__ (see utils._lazy.lazy_module), without the names whose dependencies are not
# installed, so that `from sklearn_icml.privacy import *` works without torch
__getattr__, __dir__ = lazy_module(
    __name__, __all__, {"DPSGDClassifier": "._dpsgd"}, {"._dpsgd": ("torch", "skorch")}
)
del __all__
