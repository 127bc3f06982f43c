"""Normal equations of recordings with what the engine reports about them."""
from __future__ import annotations

import copy

import numpy as np

from robot_identification._threads import one_blas_thread
from robot_identification.estimation import NormalEquations

#: Samples (regressor samples, after decimation) per time block of
#: :meth:`RecordingEquations.time_blocks` at the start of a recording ...
TIME_BLOCK_SAMPLES = 64
#: ... and the fewest blocks kept: at twice this many (in one recording, or over the summed
#: recordings), adjacent pairs merge (the block length doubles), so the memory stays bounded
#: however long the recording and however many recordings.
MAX_TIME_BLOCKS = 16


class RecordingEquations(NormalEquations):
    """:class:`~robot_identification.estimation.NormalEquations` of one or more recordings
    (the sums) and the engine's account of them (built by
    :func:`~robot_identification.identification.recording_normal_equations` and the
    on-line identifier; :func:`~robot_identification.identification.solve` wraps plain
    sums in one).

    Attributes
    ----------
    n_samples, n_input : int
        Regressor samples and raw input samples behind the sums.
    t_regressor : float
        Time spent in the regressor [s].
    reversal_counts : ndarray (2,)
        Used friction rows within the reversal window of a velocity reversal or stop, and
        all used friction rows (the ``coulomb_filter_smear`` diagnostic).
    drives_off : int
        Samples excluded as drives off / braked (every effort exactly 0 while the arm
        moves, with the filter's settling window; the ``drives_off_rows`` diagnostic).
    recordings : list of dict
        Per-recording summaries for the diagnostics
        (:func:`robot_identification.diagnostics.recording_summary`), concatenated.
    true_parameters : dict or None
        Known standard parameters of the data (simulation), kept from the first recording
        when equations are summed.
    preprocessing : dict or None
        The pre-processing strategy and its resolved settings (for results.yaml), kept from
        the first recording.
    spring : SpringSums or None
        The spring equations tau_J = K (theta - q) of an elastic arm with joint torque
        sensors and link encoders (docs/elastic.md); any object with ``+``.
    base : BaseParameters or None
        The columns of these equations where the result's base parameters differ (joint
        stiffness identified outside them and appended); None: the result's.
    stop_differences : list of StopDifference
        Per larger stop velocity accumulated in the same pass (``stops`` of
        :func:`~robot_identification.identification.recording_normal_equations`), the sums
        of the rows it drops that these equations keep (:meth:`with_stop_choice`).

    All of them add up with ``+=``, so the equations of many recordings are a sum.

    :meth:`time_blocks` gives the same sums split into consecutive time blocks (of the rows
    added through :meth:`add`, in their order; the blocks of summed recordings one after the
    other): what refits without a stretch of the data need
    (:func:`~robot_identification.estimation.leave_block_out`), at ``MAX_TIME_BLOCKS``
    to twice as many copies of the sums per recording.
    """

    def __init__(self, n_parameters: int, n_groups: int, structure=None):
        super().__init__(n_parameters, n_groups, structure)
        self.n_samples = 0
        self.n_input = 0
        self.t_regressor = 0.0
        self.recordings = []
        self.reversal_counts = np.zeros(2, dtype=np.int64)
        self.drives_off = 0
        self.true_parameters = None
        self.preprocessing = None
        self.spring = None
        self.base = None
        self._blocks = []            # closed time blocks: (G, b, c, count) each
        self._block_len = TIME_BLOCK_SAMPLES
        self._open = 0               # samples in the open block
        self._mark = None            # the sums where the open block began
        self._blocks_valid = True    # False once sums without blocks were added
        self.stop_differences = []

    #: :meth:`add` gathers each group's rows of a block once (:meth:`groups_of`).
    _gather_once = True

    def _sums(self):
        return self.G.copy(), self.b.copy(), self.c.copy(), self.count.copy()

    def add(self, W, y, mask=None, weights=None):
        """:meth:`NormalEquations.add`, the block's rows split at the time-block
        boundaries (the same sums; with group columns each group gathered and scaled once,
        :meth:`~robot_identification.estimation.NormalEquations.groups_of`)."""
        W = np.asarray(W, dtype=float)
        n = W.shape[0] if W.ndim == 3 else 0
        if n == 0:
            return super().add(W, y, mask, weights)
        groups = None
        if self.group_columns is not None and self._gather_once:  # gathered once, split
            W, y = self._checked(W, y)
            mask = None if mask is None else np.asarray(mask, dtype=bool)
            groups = self.groups_of(W, y, mask, weights)
        i = 0
        while i < n:
            if self._mark is None:
                self._mark = self._sums()
            k = min(n - i, self._block_len - self._open)
            sl = slice(i, i + k)
            if groups is not None:
                self.count += k if mask is None else mask[sl].sum(axis=0)
                self.add_groups(groups, sl)
            else:
                self._add_block(W[sl], np.asarray(y)[sl],
                                None if mask is None else np.asarray(mask)[sl],
                                None if weights is None else np.asarray(weights)[sl])
            self._open += k
            i += k
            if self._open >= self._block_len:
                self._blocks.append(self._open_block())
                self._mark, self._open = None, 0
                if len(self._blocks) >= 2 * MAX_TIME_BLOCKS:
                    self._blocks = _merge_pairs(self._blocks)
                    self._block_len *= 2

    def _add_block(self, W, y, mask, weights):
        NormalEquations.add(self, W, y, mask, weights)

    def _open_block(self):
        # the sums less the mark, without copying the sums first (issue #29: a 6 x 64 x 64
        # copy per block of the real UR10e runs' ~220)
        now = (self.G, self.b, self.c, self.count)
        return tuple(a - then for a, then in zip(now, self._mark))

    def time_blocks(self):
        """The sums split into consecutive time blocks: list of ``(G, b, c, count)``
        (shapes as the attributes), the last one possibly shorter; they add up to the
        sums. None when the split is not known (sums added without blocks, e.g. a plain
        :class:`NormalEquations`)."""
        if not self._blocks_valid:
            return None
        out = list(self._blocks)
        if self._mark is not None and self._open:
            out.append(self._open_block())
        return out

    @classmethod
    def of(cls, neq):
        """``neq`` itself when it is RecordingEquations, else its sums with an empty
        account (a plain :class:`NormalEquations`, e.g. of the Monte-Carlo study)."""
        if isinstance(neq, cls):
            return neq
        out = cls(neq.p, neq.groups)
        out += neq
        return out

    def __iadd__(self, other):
        mine = self.time_blocks()
        super().__iadd__(other)
        theirs = other.time_blocks() if isinstance(other, RecordingEquations) else None
        if mine is None or (theirs is None and np.any(other.count)):
            self._blocks_valid, self._blocks = False, []
        else:
            self._blocks = mine + (theirs or [])
            while len(self._blocks) >= 2 * MAX_TIME_BLOCKS:
                self._blocks = _merge_pairs(self._blocks)
        self._mark, self._open = None, 0
        if not isinstance(other, RecordingEquations):
            return self
        self.n_samples += other.n_samples
        self.n_input += other.n_input
        self.t_regressor += other.t_regressor
        self.recordings = list(self.recordings) + list(other.recordings)
        self.reversal_counts += other.reversal_counts
        self.drives_off += other.drives_off
        if not self.true_parameters:
            self.true_parameters = other.true_parameters
        if self.preprocessing is None:
            self.preprocessing = other.preprocessing
        if other.spring is not None:
            self.spring = other.spring if self.spring is None else self.spring + other.spring
        if self.base is None:
            self.base = other.base
        if other.stop_differences:
            if self.stop_differences:
                for mine, theirs in zip(self.stop_differences, other.stop_differences):
                    mine += theirs
            else:       # copies: adding to them later must not change ``other``'s
                self.stop_differences = [copy.deepcopy(d) for d in other.stop_differences]
        return self

    def with_stop_choice(self, choice, stops=None):
        """These equations with, per joint j, the rows of stop velocity ``choice[j]``: its
        row group less the sums of ``stop_differences[choice[j] - 1]`` (0: these equations'
        own rows). The same sums, time blocks and reversal counts as a pass with those stop
        velocities (to rounding: a difference of sums), without reading the data again.

        Parameters
        ----------
        choice : array_like (n,) of int
            Per joint, 0 or 1 + an index into :attr:`stop_differences`.
        stops : array_like (n,), optional
            The chosen stop velocities [rad/s] for ``preprocessing['stop_velocity']``.

        Returns
        -------
        RecordingEquations
            A new object (these equations are left as they are), without
            ``stop_differences``.

        Raises
        ------
        ValueError
            A choice without its difference equations, or time blocks that do not match.
        """
        choice = np.asarray(choice, dtype=int)
        parts = []                  # (group of these equations, difference, its group)
        for j, c in enumerate(choice):
            if c == 0:
                continue
            if not 0 < c <= len(self.stop_differences):
                raise ValueError(f"stop choice {c} for joint {j + 1}: "
                                 f"{len(self.stop_differences)} difference equations")
            d = self.stop_differences[c - 1]
            parts.append((self.groups - d.groups + j, d, j))
        out = copy.copy(self)
        out.G, out.b, out.c, out.count = self._sums()
        out.scale_sums = self.scale_sums.copy()
        out.reversal_counts = self.reversal_counts.copy()
        out.recordings = list(self.recordings)
        out.stop_differences = []
        out._square = {}
        for g, d, j in parts:
            out.G[g] -= d.G[j]
            out.b[g] -= d.b[j]
            out.c[g] -= d.c[j]
            out.count[g] -= d.count[j]
            out.reversal_counts[0] += d.near_used[j]
        blocks = self.time_blocks()
        if blocks is not None:
            theirs = {id(d): d.time_blocks() for _, d, _ in parts}
            if any(t is None or len(t) != len(blocks) for t in theirs.values()):
                raise ValueError("stop choice: the difference equations' time blocks do not "
                                 "match")
            new = []
            for i, blk in enumerate(blocks):
                G, b, c, count = (a.copy() for a in blk)
                for g, d, j in parts:
                    G[g], b[g], c[g], count[g] = (
                        x[g] - y[j] for x, y in zip((G, b, c, count), theirs[id(d)][i]))
                new.append((G, b, c, count))
            out._blocks = new
        out._mark, out._open = None, 0
        if stops is not None and self.preprocessing is not None:
            out.preprocessing = dict(self.preprocessing,
                                     stop_velocity=[float(v) for v in stops])
        return out


class StopDifference(RecordingEquations):
    """The rows that a larger stop velocity drops and the equations it travels with keep
    (:attr:`RecordingEquations.stop_differences`): one row group per joint (the friction rows
    a joint's stop velocity acts on: a rigid arm's joint rows, an elastic arm's motor
    rows), added with the same blocks as those equations, so their time blocks match.
    Few rows: :meth:`add` gathers each group's masked rows before the products (the same
    sums as :meth:`NormalEquations.add` to rounding, at the cost of those rows alone).

    Attributes
    ----------
    near_used : ndarray (n,) of int
        Per joint the used friction rows that this stop velocity adds to the reversal
        window's (``reversal_counts[0]`` of the chosen equations).
    """

    _gather_once = False            # few rows: gathered per time block, masked rows only

    def __init__(self, n_parameters: int, n_groups: int, structure=None):
        super().__init__(n_parameters, n_groups, structure)
        self.near_used = np.zeros(n_groups, dtype=np.int64)

    def _add_block(self, W, y, mask, weights):
        if mask is None or weights is not None:
            raise ValueError("StopDifference: rows are given by a mask, without weights")
        counts = mask.sum(axis=0)
        self.count += counts
        with one_blas_thread():
            for j in np.flatnonzero(counts):         # groups without rows: nothing to add
                rows = np.flatnonzero(mask[:, j])
                cols = None if self.group_columns is None else self.group_columns[j]
                Wj = W[rows, j] if cols is None else W[rows, j][:, cols]
                self._add_group(j, Wj, y[rows, j], cols)

    def __iadd__(self, other):
        super().__iadd__(other)
        self.near_used += other.near_used
        return self


def _merge_pairs(blocks):
    """Adjacent time blocks summed pairwise (an odd last one kept)."""
    out = [tuple(a + b for a, b in zip(x, y)) for x, y in zip(blocks[0::2], blocks[1::2])]
    return out + list(blocks[len(out) * 2:])
