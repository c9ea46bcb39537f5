"""Bandit algorithms and their environments."""

__all__ = []

# --- multi-agent-bai ---

# --- bandits-with-interference ---
