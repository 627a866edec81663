"""SignLists: inverted lists over a large project's sign bits, so a probe scans a few lists.

Issue 37: a batched append checks each new text for look-alikes before it is written. At a
million memories a project is too large for the int8 copy (PRECISE_MAX_ROWS), so each text
was searched alone, and the Hamming pass over 800k codes (3.1 ms) plus the exact rescore of
its 200 candidates (1.5 ms) cost 2.7 s of a 4.4 s batch of 500. The lists cut the pass to the
rows of the few lists nearest each text: a spherical k-means over the rows' sign vectors
(the +-1 vector the coarse bits encode), trained on a sample, every row filed under its
nearest centre. Nothing here reads the store; the caller hands over packed bits.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SignLists", "list_count"]

# Rows per list the lists are sized for, and the bounds on their number: filing a row costs
# one dot product per list (800k rows into 256 lists: ~1.2 s on 2 cores, 4x that into 1,024),
# while a probe scans about nprobe / lists of the rows.
_ROWS_PER_LIST = 3_000
_MIN_LISTS = 64
_MAX_LISTS = 1_024
# Training sample per list and k-means rounds: centres settle within a few rounds, and the
# probe only needs them to put near rows in the same or neighbouring lists.
_TRAIN_PER_LIST = 24
_TRAIN_ROUNDS = 6
# Rows assigned per matrix product (16k x 384 float32 sign vectors: 24 MB at a time).
_CHUNK = 16_384
# Rows filed since the last `regroup`, as a share of all, before the next one: the tail is
# scanned whole by every probe (at 800k rows, up to 25k rows: ~0.1 ms a text).
_TAIL_SHARE = 1 / 32


def list_count(rows: int) -> int:
    """How many lists a project of `rows` rows is split into."""
    return max(_MIN_LISTS, min(_MAX_LISTS, rows // _ROWS_PER_LIST))


def _signs(packed: Any) -> Any:
    """+-1 float32 rows from packed sign bits ((n, nbytes) uint8, vec_quantize_binary's order)."""
    import numpy as np

    bits = np.unpackbits(packed, axis=1, bitorder="little")
    signs: Any = bits.astype(np.float32) * 2.0 - 1.0
    return signs


class SignLists:
    """Centres, and the list each row (by position, in the order rows were added) is filed under."""

    def __init__(self, centres: Any, trained_on: int) -> None:
        import numpy as np

        self.centres = centres  # (lists, dims) float32, unit rows
        self.trained_on = trained_on  # the project's size when trained
        self._assigned = np.zeros(0, dtype=np.int16)
        self.size = 0
        # Rows [0, grouped) copied in list order (`regroup`): positions, words and layers, and
        # where each list starts. Rows filed since are scanned whole, as a tail.
        self.grouped = 0
        self._order = np.zeros(0, dtype=np.int64)
        self._starts = np.zeros(centres.shape[0] + 1, dtype=np.int64)
        self._words: Any = None
        self._layers: Any = None

    @classmethod
    def train(cls, packed: Any, lists: int, *, seed: int = 0) -> SignLists:
        """Spherical k-means over a sample of rows' sign vectors (rows of packed bits)."""
        import numpy as np

        rng = np.random.default_rng(seed)
        n = packed.shape[0]
        lists = max(1, min(lists, n))
        take = min(n, lists * _TRAIN_PER_LIST)
        sample = _signs(packed[np.sort(rng.choice(n, size=take, replace=False))])
        centres = sample[rng.choice(take, size=lists, replace=False)].copy()
        for _ in range(_TRAIN_ROUNDS):
            nearest = np.argmax(sample @ centres.T, axis=1)
            sums = np.zeros_like(centres)
            np.add.at(sums, nearest, sample)
            empty = ~sums.any(axis=1)
            # A centre no row chose restarts at a random row, so every list stays in use.
            sums[empty] = sample[rng.choice(take, size=int(empty.sum()), replace=False)]
            centres = sums
            centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        return cls(centres.astype(np.float32), n)

    def extend(self, packed: Any) -> None:
        """File the next rows (packed bits, in position order) under their nearest centres."""
        import numpy as np

        if packed.shape[0] == 0:
            return
        # signs @ c = 2 * (bits @ c) - sum(c), so the 0/1 bits are multiplied as they are, in
        # buffers reused across chunks: converting each chunk to fresh +-1 floats cost more
        # than the product itself (65 + 35 ms against 25 ms a 16k chunk, 256 lists).
        doubled = np.ascontiguousarray(2.0 * self.centres.T, dtype=np.float32)
        offset = self.centres.sum(axis=1, dtype=np.float32)
        rows = min(_CHUNK, packed.shape[0])
        floats = np.empty((rows, doubled.shape[0]), dtype=np.float32)
        scores = np.empty((rows, doubled.shape[1]), dtype=np.float32)
        chosen = []
        for start in range(0, packed.shape[0], _CHUNK):
            bits = np.unpackbits(packed[start : start + _CHUNK], axis=1, bitorder="little")
            n = bits.shape[0]
            np.copyto(floats[:n], bits, casting="unsafe")
            np.matmul(floats[:n], doubled, out=scores[:n])
            scores[:n] -= offset
            chosen.append(np.argmax(scores[:n], axis=1).astype(np.int16))
        self._assigned = np.concatenate([self._assigned[: self.size], *chosen])
        self.size = self._assigned.size

    def probe(self, queries: Any, nprobe: int) -> Any:
        """The `nprobe` lists nearest each query ((m, dims) floats), as an (m, nprobe) array.

        By the query's own vector, not its signs: rows are filed by their signs (all memory
        holds of them), but probing by the float query missed half as many look-alikes (30k
        rows, 8 of 64 lists, cosine >= 0.65: 3 of 38 against 6).
        """
        import numpy as np

        scores = queries @ self.centres.T
        nprobe = min(nprobe, scores.shape[1])
        return np.argpartition(-scores, nprobe - 1, axis=1)[:, :nprobe]

    def needs_regroup(self) -> bool:
        """Whether the ungrouped tail has grown past _TAIL_SHARE of the rows (or all are)."""
        return self.size > self.grouped and (
            self.grouped == 0 or self.size - self.grouped > self.size * _TAIL_SHARE
        )

    def regroup(self, words: Any, layers: Any) -> None:
        """Copy every filed row's words and layer into list order: a list is one slice.

        `words` is word-major, as _CoarseBits keeps them. Why: the rows of 16 lists gathered
        by position from the word-major arrays cost 9.8 ms a text at 800k rows (a cache miss
        per word of each row), three times a contiguous pass over all 800k; read as slices of
        the copy, the whole look-alike check costs 1.8 ms a text. The copy takes as much
        memory as the bits (48 bytes a row).
        """
        import numpy as np

        # A stable sort of 16-bit keys is a radix sort (~5 ms at 800k rows).
        order = np.argsort(self._assigned[: self.size], kind="stable")
        counts = np.bincount(self._assigned[: self.size], minlength=self.centres.shape[0])
        self._starts = np.concatenate([[0], np.cumsum(counts)])
        self._words = np.take(words[:, : self.size], order, axis=1)
        self._layers = layers[: self.size][order]
        self._order, self.grouped = order, self.size

    def scan(self, lists: Any, words: Any, layers: Any, query: Any) -> tuple[Any, Any, Any]:
        """(Hamming distances, layer codes, positions) of the rows under `lists`, and the tail.

        Distances are from `query` (its words) to the rows filed under `lists`, then to every
        row filed since `regroup`. `words` and `layers` are _CoarseBits' arrays (holding at
        least `size` rows), read for the tail. Each span is counted where it lies:
        concatenating the spans' words first cost 3.2 ms a text at 800k rows (16 lists, 71k
        rows), more than the counting.
        """
        import numpy as np

        spans = [
            (self._words, self._layers, int(self._starts[i]), int(self._starts[i + 1]))
            for i in lists
        ]
        spans.append((words, layers, self.grouped, self.size))
        column = query[:, None]
        counted = [
            np.bitwise_count(held[:, a:b] ^ column).sum(axis=0, dtype=np.uint16)
            for held, _, a, b in spans
            if b > a
        ]
        distance = np.concatenate(counted) if counted else np.zeros(0, dtype=np.uint16)
        kinds = np.concatenate([kind[a:b] for _, kind, a, b in spans if b > a] or [layers[:0]])
        positions = np.concatenate(
            [self._order[a:b] for _, _, a, b in spans[:-1]] + [np.arange(self.grouped, self.size)]
        )
        return distance, kinds, positions
