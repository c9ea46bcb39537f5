"""Where the loaders keep what they convert once: the data home (scikit-learn's manner)."""

import os
from pathlib import Path

from sklearn.utils._param_validation import validate_params

DATA_HOME_VARIABLE = "SKLEARN_ICML_DATA"


@validate_params({"data_home": [str, os.PathLike, None]}, prefer_skip_nested_validation=True)
def get_data_home(data_home=None):
    """The folder where converted models and data are kept, created if missing.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The folder. By default the environment variable ``SKLEARN_ICML_DATA`` if set, else
        ``~/sklearn_icml_data``. ``~`` is expanded.

    Returns
    -------
    data_home : str
        The folder's absolute path.

    Examples
    --------
    >>> import tempfile
    >>> from sklearn_icml.datasets import get_data_home
    >>> folder = tempfile.mkdtemp()
    >>> get_data_home(folder) == folder
    True
    """
    if data_home is None:
        data_home = os.environ.get(DATA_HOME_VARIABLE) or Path("~") / "sklearn_icml_data"
    folder = Path(data_home).expanduser().absolute()
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"data_home must be a folder; {str(folder)!r} is a file.")
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder)
