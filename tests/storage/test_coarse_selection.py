"""The coarse pass's rows: the sampled bound picks exactly what counting every row picks."""

from __future__ import annotations

import numpy as np
import pytest

from memory_core.storage.sqlite.vectors import _smallest, _smallest_sampled

NBITS = 384


def _distances(rng: np.random.Generator, n: int, shape: str) -> np.ndarray:
    """Hamming distances as a coarse pass sees them: most rows far, a few near, many ties."""
    if shape == "binomial":
        distance = rng.binomial(NBITS, 0.45, size=n)
        near = rng.choice(n, size=min(n, 60), replace=False)
        distance[near] = rng.integers(10, 120, size=near.size)
    elif shape == "few values":  # ties everywhere: the cut falls inside a run of equal rows
        distance = rng.integers(150, 154, size=n)
    else:  # "sorted": near rows at the end of the arrays, as recent writes are
        distance = np.sort(rng.binomial(NBITS, 0.45, size=n))[::-1].copy()
    return distance.astype(np.uint16)


@pytest.mark.parametrize("shape", ["binomial", "few values", "sorted"])
@pytest.mark.parametrize("layer", [None, 0, 3])
@pytest.mark.parametrize("seed", [1, 2])
def test_sampled_bound_picks_the_rows_counting_every_row_picks(
    shape: str, layer: int | None, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    n = 60_000
    distance = _distances(rng, n, shape)
    # Layer 0 holds most rows, layer 3 about 2 % of them (a minority layer's search).
    layers = np.where(rng.random(n) < 0.02, 3, 0).astype(np.int8)
    for count in (1, 50, 200, 600):
        sampled = _smallest_sampled(distance, layers, layer, count, NBITS)
        assert sampled is not None, "the bound covered too few rows: the test checks nothing"
        expected = _smallest(distance, layers, layer, count, NBITS)
        assert sampled.tolist() == expected.tolist()
        if layer is not None:
            assert (layers[sampled] == layer).all()


def test_too_few_rows_under_the_bound_is_left_to_counting_every_row() -> None:
    rng = np.random.default_rng(3)
    n = 40_000
    distance = _distances(rng, n, "binomial")
    layers = np.zeros(n, dtype=np.int8)
    layers[rng.choice(n, size=150, replace=False)] = 3
    # 150 rows of layer 3 cannot fill 200 places: the sampled path declines, the caller counts.
    assert _smallest_sampled(distance, layers, 3, 200, NBITS) is None
    rows = _smallest(distance, layers, 3, 200, NBITS)
    assert sorted(rows.tolist()) == np.flatnonzero(layers == 3).tolist()
    # An array too small to sample is counted whole.
    assert _smallest_sampled(distance[:1000], layers[:1000], None, 200, NBITS) is None


def test_counting_leaves_the_distances_as_they_were() -> None:
    rng = np.random.default_rng(4)
    distance = _distances(rng, 5_000, "binomial")
    layers = (rng.random(5_000) < 0.5).astype(np.int8)
    before = distance.copy()
    _smallest(distance, layers, 1, 100, NBITS)
    assert (distance == before).all()
