"""Importable modules that enable experimental parts of sklearn-icml.

An experimental method may change, or go, without a deprecation cycle. To use one, import
its ``enable_*`` module first, as scikit-learn's ``sklearn.experimental`` does::

    from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa
    from sklearn_icml.bandits import BAIClPlusPlus
"""
