"""Read-only attributes of an environment that its ``_build()`` derives at first use."""


class BuiltAttribute:
    """An attribute derived from the parameters: reading it sets the environment up first.

    A :class:`~sklearn_icml.base.BaseEnvironment` only stores its parameters in
    ``__init__`` and derives its state in ``_build()`` at first use. Declaring a derived
    attribute ``eta_ = BuiltAttribute()`` on the class lets ``env.eta_`` be read before any
    other call: the read runs ``env._setup()`` (validation and ``_build()``, once), then
    returns what ``_build()`` stored under ``_eta_``.

    Examples
    --------
    >>> from sklearn_icml.base import BaseEnvironment
    >>> from sklearn_icml.bandits._env_attributes import BuiltAttribute
    >>> class Coin(BaseEnvironment):
    ...     odds_ = BuiltAttribute()
    ...     def __init__(self, p=0.5):
    ...         self.p = p
    ...     def _build(self):
    ...         self._odds_ = self.p / (1 - self.p)
    >>> Coin(p=0.75).odds_
    3.0
    """

    def __set_name__(self, owner, name):
        self.name = name
        self.slot = "_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        obj._setup()
        return getattr(obj, self.slot)

    def __set__(self, obj, value):
        raise AttributeError(f"{self.name} is derived from the parameters; use set_params.")
