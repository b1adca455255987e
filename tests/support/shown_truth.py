"""What a panel showed at each instant held against the truth."""

from __future__ import annotations


def off_truth(shown: dict[float, dict[str, float]], truth) -> dict[float, tuple[dict, dict]]:
    """The instants whose values differ from the truth's by more than float rounding."""
    def near(a: dict, b: dict) -> bool:
        return a.keys() == b.keys() and all(abs(a[k] - b[k]) < 1e-9 for k in a)
    return {t: (value, truth(t)) for t, value in shown.items() if not near(value, truth(t))}
