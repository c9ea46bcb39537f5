"""Enable :class:`~sklearn_icml.bandits.BAIClPlusPlus`, the experimental BAI-Cl++.

Importing this module adds ``BAIClPlusPlus`` to :mod:`sklearn_icml.bandits`. BAI-Cl++
depends on a phase 2 that the paper does not fully specify (see the class's Notes); its
API may change without a deprecation cycle.

Examples
--------
>>> # explicitly require this experimental feature
>>> from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa
>>> # now you can import normally from sklearn_icml.bandits
>>> from sklearn_icml.bandits import BAIClPlusPlus
"""

from .. import bandits
from ..bandits._bai_cl_plus_plus import BAIClPlusPlus

# the name is added to the subpackage at run time, not in its source
bandits.BAIClPlusPlus = BAIClPlusPlus
if "BAIClPlusPlus" not in bandits.__all__:
    bandits.__all__ += ["BAIClPlusPlus"]
