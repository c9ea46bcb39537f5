"""One way to turn ``random_state`` into random numbers, for every method.

Every public object of sklearn-icml takes ``random_state`` with scikit-learn's semantics:
``None`` (fresh, unpredictable randomness), an ``int`` (the same result on every run) or a
``numpy.random.RandomState`` instance (advanced by the call). Code that needs

* a ``RandomState`` calls :func:`check_random_state` (scikit-learn's own);
* a ``numpy.random.Generator`` calls :func:`check_generator`: an ``int`` seeds
  ``np.random.default_rng(seed)`` directly, a ``RandomState`` gives one draw of
  :func:`draw_seed` to ``default_rng``, ``None`` gives an unseeded ``default_rng()``;
* an integer seed for another library (torch, a child process) calls :func:`draw_seed`,
  which is ``check_random_state(random_state).randint(2**31 - 1)``: scikit-learn's own way
  of seeding a sub-estimator, so an ``int`` always gives the same seed;
* independent seeds for several parts of one run (an environment and the algorithm that
  plays it, say) calls :func:`spawn_seeds`, which splits a seed with numpy's
  ``SeedSequence`` so that the parts' streams do not overlap.

A ``numpy.random.Generator`` is accepted too wherever a Generator is wanted (it is used as
it is), so that internal helpers can pass one stream down a call chain.
"""

import numbers

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["MAX_SEED", "check_generator", "check_random_state", "draw_seed", "spawn_seeds"]

#: Seeds drawn by :func:`draw_seed` lie in ``[0, MAX_SEED)``: a valid seed for numpy, torch
#: and a 32-bit C ``int``.
MAX_SEED = np.iinfo(np.int32).max


def _check_seed_type(random_state, *, allow_generator):
    kinds = (numbers.Integral, np.random.RandomState)
    if allow_generator:
        kinds += (np.random.Generator,)
    if random_state is not None and (
        isinstance(random_state, bool) or not isinstance(random_state, kinds)
    ):
        expected = "None, an int, a numpy RandomState" + (
            " or a numpy Generator" if allow_generator else ""
        )
        raise TypeError(f"random_state must be {expected}. Got {random_state!r} instead.")


def draw_seed(random_state):
    """An integer seed in ``[0, MAX_SEED)`` drawn from ``random_state``.

    Parameters
    ----------
    random_state : int, RandomState instance, Generator or None
        An ``int`` always gives the same seed; a ``RandomState`` or ``Generator`` is
        advanced by one draw; ``None`` draws from numpy's global RNG.

    Returns
    -------
    seed : int

    Examples
    --------
    >>> from sklearn_icml.utils import draw_seed
    >>> draw_seed(0) == draw_seed(0)
    True
    """
    _check_seed_type(random_state, allow_generator=True)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(MAX_SEED))
    return int(check_random_state(random_state).randint(MAX_SEED))


def check_generator(random_state):
    """A ``numpy.random.Generator`` from ``random_state``.

    Parameters
    ----------
    random_state : int, RandomState instance, Generator or None
        ``int``: ``np.random.default_rng(random_state)``; ``RandomState``: a Generator seeded
        by one :func:`draw_seed` draw from it; ``Generator``: returned as it is; ``None``:
        ``np.random.default_rng()`` (fresh entropy).

    Returns
    -------
    rng : numpy.random.Generator

    Raises
    ------
    TypeError
        If ``random_state`` is of another type.
    ValueError
        If an ``int`` is negative.

    Examples
    --------
    >>> from sklearn_icml.utils import check_generator
    >>> float(check_generator(0).random()) == float(check_generator(0).random())
    True
    """
    _check_seed_type(random_state, allow_generator=True)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(draw_seed(random_state))
    if random_state < 0:
        raise ValueError(f"random_state must be a non-negative int. Got {random_state!r} instead.")
    return np.random.default_rng(int(random_state))


def spawn_seeds(random_state, n_seeds):
    """``n_seeds`` independent integer seeds from one ``random_state``.

    An ``int`` is split with ``np.random.SeedSequence(random_state).generate_state``, so the
    seeds are a fixed function of it and the streams they start do not overlap (seeding an
    environment and the algorithm that plays it with the same int would correlate them).
    A ``RandomState``, ``Generator`` or ``None`` first gives one :func:`draw_seed` draw.

    Parameters
    ----------
    random_state : int, RandomState instance, Generator or None
    n_seeds : int

    Returns
    -------
    seeds : list of int
        Each in ``[0, MAX_SEED)``.

    Examples
    --------
    >>> from sklearn_icml.utils import spawn_seeds
    >>> env_seed, algorithm_seed = spawn_seeds(7, 2)
    >>> spawn_seeds(7, 2) == [env_seed, algorithm_seed], env_seed != algorithm_seed
    (True, True)
    """
    _check_seed_type(random_state, allow_generator=True)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(
                f"random_state must be a non-negative int. Got {random_state!r} instead."
            )
        entropy = int(random_state)
    else:
        entropy = draw_seed(random_state)
    state = np.random.SeedSequence(entropy).generate_state(int(n_seeds), dtype=np.uint64)
    return [int(v % MAX_SEED) for v in state]
