"""The MACE search stages as per-query generators (Yang et al. 2022, arXiv 2205.15540).

Every stage is written for one (query, desired class) pair, as a generator that *yields*
internal rows to evaluate and receives their class probabilities back. A driver runs many
generators in lock-step and evaluates all their pending rows in one model call, so the
number of model calls does not grow with the number of queries and no stage predicts a
single row at a time.

Nothing here knows about the neighbour index or the user's data types: the candidates come
in as ``(columns, values)``, rows are internal float arrays (see ``_encoding``). A missing
value is ``NaN`` in a continuous column (``-1`` in a categorical one): it equals itself,
and no stage ever writes a new one (candidate values are real values).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

__all__ = [
    "MaceSettings",
    "SearchOutcome",
    "candidates_from_neighbors",
    "drive",
    "mace_search",
]

_P_LOW, _P_HIGH = 0.1, 0.8  # range of the column-selection probabilities (OmniXAI's clamps)


@dataclass(frozen=True)
class MaceSettings:
    """Settings of one MACE search, built by ``MaceRecourse`` from its parameters.

    The fixed values are the paper's / OmniXAI's (Adam learning rate, REINFORCE batch and
    epochs, GLD radii and epochs, bisection steps). ``exhaustive_max_rows`` is the row
    budget of the levels ``k >= 2`` of the final exhaustive stage (per query and desired
    class); ``exhaustive_chunk_rows`` bounds the rows one query sends per model call there.
    """

    method: str = "rl"
    n_counterfactuals: int = 3
    max_changes: int = 8
    n_feature_columns: int = 10
    column_selection: str = "effect"
    lr: float = 0.1
    lambda1: float = 2.0
    lambda2: float = 2.0
    rl_batch_size: int = 40
    n_epochs: int = 15
    n_policy_samples: int = 80
    gld_max_radius: float = 0.25
    gld_min_radius: float = 0.0005
    gld_num_starts: int = 3
    n_epochs_gld: int = 20
    n_epochs_refine: int = 20
    n_bisection: int = 6
    refine: str = "both"
    diversity_cap: int | None = 3
    fill: bool = True
    sparsity_weight: float = 1.0
    sparsify: bool = True
    fallback: bool = True
    exhaustive: bool = True
    exhaustive_max_rows: int = 20_000
    exhaustive_chunk_rows: int = 4096

    def __post_init__(self):
        if self.method not in ("rl", "gld"):
            raise ValueError(f"method must be 'rl' or 'gld', got {self.method!r}.")
        if self.refine not in ("both", "gld", "bisection", "none"):
            raise ValueError(
                f"refine must be 'both', 'gld', 'bisection' or 'none', got {self.refine!r}.")
        if self.column_selection not in ("effect", "votes"):
            raise ValueError("column_selection must be 'effect' or 'votes', got "
                             f"{self.column_selection!r}.")


@dataclass
class SearchOutcome:
    """How the search of one (query, desired class) ended.

    Attributes
    ----------
    stage : str
        The stage whose rows were kept: the search method (``"rl"``/``"gld"``),
        ``"greedy"``, ``"nearest_unlike"``, ``"exhaustive_<k>"`` or ``"none"``.
    exhaustive_levels : int
        Numbers of changes the exhaustive stage searched (0 if it did not run).
    exhaustive_skipped : tuple of (int, int) or None
        ``(level, n_rows)`` of the first level its row budget left out.
    """

    stage: str = "none"
    exhaustive_levels: int = 0
    exhaustive_skipped: tuple | None = None


# --------------------------------------------------------------------------- missing values
def _changed(rows, x):
    """Entries of ``rows`` that differ from ``x``; a missing value (NaN) equals itself."""
    rows = np.asarray(rows, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    return (rows != x) & ~(np.isnan(rows) & np.isnan(x))


def _unique_rows(rows):
    """``np.unique(rows, axis=0, return_index=True)`` with NaN equal to NaN."""
    key = np.where(np.isnan(rows), np.inf, rows)  # internal values are never infinite
    _, first = np.unique(key, axis=0, return_index=True)
    return rows[first], first


# --------------------------------------------------------------------------- stage 1
def candidates_from_neighbors(enc, x, neigh, n_columns, n_values, extra=None):
    """Algorithm 1: candidate columns and values from desired-class neighbours.

    Parameters
    ----------
    enc : TabularEncoder
    x : ndarray of shape (d,), internal query
    neigh : ndarray of shape (k, d), internal rows of the k nearest desired-class rows
    n_columns : int or None
        Keep the ``n_columns`` columns whose value differs from ``x`` in the most
        neighbours (for a continuous column: whose quantile bin differs, as in the paper,
        which discretises continuous features for this step); ``None`` keeps every voted
        column, ranked by votes.
    n_values : int
        Categorical: the ``n_values`` most frequent differing values (a value seen once is
        kept, unlike OmniXAI which needs two). Continuous: the ``n_values`` evenly spaced
        order statistics (min, median, max for 3) of the differing neighbour values.

    extra : ndarray of shape (n_extra, d) or None
        Further candidate values of the continuous columns (e.g. quantiles of the desired
        class), added to the neighbour values of a column that the neighbours selected.

    Values that violate the constraints (immutable, ranges, monotone) are removed here, so
    no later stage can produce them.

    Returns
    -------
    cols : ndarray of int, shape (s,)
    values : list of s ndarrays, the candidate internal values of each column
    """
    cols, vals, freq = [], [], []
    # a neighbour "differs" in a continuous column when it lies in another quantile bin
    # (columns whose quantile bins collapsed to fewer than 3, e.g. a mostly-zero capital
    # gain, compare raw values instead)
    cx = enc.cells(x[None, :])[0]
    cn = enc.cells(neigh)
    coarse_set = set()
    if enc.cont_.size:
        coarse = enc.cont_[enc.kbins_.n_bins_ < 3]
        cx[coarse] = x[coarse]
        cn[:, coarse] = neigh[:, coarse]
        coarse_set = set(coarse.tolist())
    for j in range(x.shape[0]):
        if not enc.mutable_[j]:
            continue
        v = neigh[:, j]
        ok = enc.allowed(j, x[j], v) & (cn[:, j] != cx[j])
        if not ok.any():
            continue
        v = v[ok]
        if enc.categorical_[j]:
            u, cnt = np.unique(v, return_counts=True)
            cand = u[np.lexsort((u, -cnt))[:n_values]]
        else:
            qs = np.linspace(0.0, 100.0, n_values) if n_values > 1 else np.array([50.0])
            cand = np.percentile(v, qs, method="inverted_cdf")
            if extra is not None and len(extra):
                e = extra[:, j]
                cand = np.concatenate([cand, e[enc.allowed(j, x[j], e)]])
            cand = np.unique(cand)
        cols.append(j)
        vals.append(np.asarray(cand, dtype=np.float64))
        # votes; ties (common when every neighbour differs) go to the column whose
        # neighbours differ most, in bins (continuous) -- a fraction below one vote
        spread = 0.0
        if not enc.categorical_[j]:
            nb = max(int(enc.kbins_.n_bins_[np.searchsorted(enc.cont_, j)]) - 1, 1)
            spread = float(np.abs(cn[ok, j] - cx[j]).mean()) / (nb + 1.0)
            if j in coarse_set:
                spread = 0.0
        freq.append(ok.sum() + spread)
    if not cols:
        return np.zeros(0, dtype=np.int64), []
    order = np.lexsort((np.asarray(cols), -np.asarray(freq)))[:n_columns]
    return np.asarray(cols, dtype=np.int64)[order], [vals[i] for i in order]


# --------------------------------------------------------------------------- helpers
def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


class _Adam:
    def __init__(self, shapes, lr, beta1=0.9, beta2=0.999, eps=1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, beta1, beta2, eps
        self.m = [np.zeros(s) for s in shapes]
        self.v = [np.zeros(s) for s in shapes]
        self.t = 0

    def step(self, params, grads):
        self.t += 1
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m *= self.b1
            m += (1 - self.b1) * g
            v *= self.b2
            v += (1 - self.b2) * g * g
            mh = m / (1 - self.b1**self.t)
            vh = v / (1 - self.b2**self.t)
            p -= self.lr * mh / (np.sqrt(vh) + self.eps)


def _value_table(values):
    s = len(values)
    mmax = max(len(v) for v in values)
    V = np.zeros((s, mmax))
    mask = np.zeros((s, mmax), dtype=bool)
    for i, v in enumerate(values):
        V[i, : len(v)] = v
        mask[i, : len(v)] = True
    return V, mask


def _build_rows(x, cols, V, select, choice):
    """Rows of ``x`` with column ``cols[i]`` set to ``V[i, choice[b, i]]`` where selected."""
    n = select.shape[0]
    rows = np.repeat(x[None, :], n, axis=0)
    chosen = V[np.arange(len(cols))[None, :], choice]
    rows[:, cols] = np.where(select, chosen, x[cols][None, :])
    return rows


def _limit_changes(select, priority, max_changes):
    """Keep at most ``max_changes`` selected columns per row, the highest ``priority``."""
    if max_changes is None or select.shape[1] <= max_changes:
        return select
    over = select.sum(axis=1) > max_changes
    if not over.any():
        return select
    pr = np.where(select, priority, -np.inf)
    rank = np.argsort(np.argsort(-pr, axis=1, kind="stable"), axis=1, kind="stable")
    out = select.copy()
    out[over] &= rank[over] < max_changes
    return out


class _Ctx:
    """Per-target evaluation helpers shared by the stages of one search."""

    def __init__(self, target, min_proba):
        self.target = target
        self.min_proba = min_proba

    def valid(self, P):
        ok = P.argmax(axis=1) == self.target
        if self.min_proba is not None:
            ok &= P[:, self.target] >= self.min_proba
        return ok


# --------------------------------------------------------------------------- stage 2a: RL
def _rl_policy(theta, phi, mask):
    """Column probabilities ``p`` (smooth in [0.1, 0.8]) and value probabilities ``q``.

    ``q_i = a_i + (1 - m_i a_i) softmax(phi_i)`` over the ``m_i`` values of column ``i``
    with the floor ``a_i = min(1 / m_i, 0.02)``.

    Returns
    -------
    sig, p : ndarray (s,)      -- sigmoid(theta) and p
    sm, q : ndarray (s, mmax)  -- softmax(phi) and q (0 where masked)
    a_floor, beta : ndarray (s, 1)
    """
    m_i = mask.sum(axis=1)
    a_floor = np.minimum(1.0 / m_i, 0.02)[:, None]
    beta = 1.0 - m_i[:, None] * a_floor
    sig = _sigmoid(theta)
    pc = _P_LOW + (_P_HIGH - _P_LOW) * sig
    z = np.where(mask, phi, -np.inf)
    z = z - z.max(axis=1, keepdims=True)
    e = np.where(mask, np.exp(z), 0.0)
    sm = e / e.sum(axis=1, keepdims=True)
    q = np.where(mask, a_floor + beta * sm, 0.0)
    return sig, pc, sm, q, a_floor, beta


def _rl_loss_grad(theta, phi, mask, sel, ch, r, lam1, lam2):
    """REINFORCE surrogate loss of a batch and its exact gradient.

    ``L = -mean_b[(sum_i log Bern(c_bi | p_i) + sum_i c_bi log q_i(v_bi)) r_b]
    + lam1 mean(p) + lam2 mean(p log p)``; the value term counts only selected columns.

    Returns
    -------
    loss : float
    g_theta : ndarray (s,)
    g_phi : ndarray (s, mmax), 0 where masked
    """
    B, s = sel.shape
    ar = np.arange(s)
    sig, pc, sm, q, a_floor, beta = _rl_policy(theta, phi, mask)
    q_sel = q[ar[None, :], ch]
    logp = np.where(sel, np.log(pc), np.log(1.0 - pc)).sum(axis=1)
    logq = np.where(sel, np.log(q_sel), 0.0).sum(axis=1)
    loss = -np.mean((logp + logq) * r) + lam1 * pc.mean() + lam2 * np.mean(pc * np.log(pc))
    dlog = np.where(sel, 1.0 / pc, -1.0 / (1.0 - pc))
    g_p = -(dlog * r[:, None]).mean(axis=0) + (lam1 + lam2 * (np.log(pc) + 1.0)) / s
    g_theta = g_p * (_P_HIGH - _P_LOW) * sig * (1.0 - sig)
    onehot = np.zeros((B, s, mask.shape[1]))
    onehot[np.arange(B)[:, None], ar[None, :], ch] = 1.0
    sm_sel = sm[ar[None, :], ch]
    dlogq = (beta[None, :, :] * sm_sel[:, :, None] / q_sel[:, :, None]) * (
        onehot - sm[None, :, :]
    )
    g_phi = -(sel[:, :, None] * dlogq * r[:, None, None]).mean(axis=0)
    g_phi[~mask] = 0.0
    return float(loss), g_theta, g_phi


def _rl(ctx, x, cols, values, rng, p):
    """Algorithm 2: REINFORCE over the column (Bernoulli) and value (softmax) policy.

    Fixes over the reference: the value log-probabilities of unselected columns are masked,
    the probability bounds are smooth squashes (``p = 0.1 + 0.7 sigmoid(theta)``,
    ``q = a + (1 - m a) softmax(phi)``), so no parameter freezes at a bound. Yields
    ``n_epochs`` batches of ``rl_batch_size`` rows, one greedy-decode batch of at most
    ``max_changes`` rows and one batch of ``n_policy_samples`` rows. The training batches
    sample every column (the REINFORCE gradient needs the unrestricted policy), so their
    valid rows enter the pool only when they change at most ``max_changes`` features;
    the decode batches change at most ``max_changes`` by construction.
    """
    s = len(cols)
    V, mask = _value_table(values)
    m_i = mask.sum(axis=1)
    theta = np.full(s, np.log(4.0 / 3.0))  # p = 0.5 at the start, as in the paper
    phi = np.zeros(V.shape)
    opt = _Adam([theta.shape, phi.shape], lr=p.lr)
    lam1, lam2 = p.lambda1, p.lambda2
    B = p.rl_batch_size
    pool, pool_p = [], []

    def policy():
        sig, pc, sm, q, _, _ = _rl_policy(theta, phi, mask)
        return sig, pc, sm, q

    def sample(pc, q, n):
        sel = rng.random((n, s)) < pc[None, :]
        cq = np.cumsum(q, axis=1)
        u = rng.random((n, s, 1)) * cq[None, :, -1:]
        ch = np.minimum((u > cq[None, :, :]).sum(axis=2), m_i[None, :] - 1)
        return sel, ch

    for _ in range(p.n_epochs):
        sig, pc, sm, q = policy()
        sel, ch = sample(pc, q, B)
        rows = _build_rows(x, cols, V, sel, ch)
        P = yield rows
        # the budget of changes holds for every candidate, as in GLD's decode
        ok = ctx.valid(P) & (_changed(rows, x[None, :]).sum(axis=1) <= p.max_changes)
        pool.append(rows[ok])
        pool_p.append(P[ok])
        f = P[:, ctx.target]
        _, g_theta, g_phi = _rl_loss_grad(
            theta, phi, mask, sel, ch, f - np.median(f), lam1, lam2
        )
        opt.step([theta, phi], [g_theta, g_phi])

    sig, pc, sm, q = policy()
    w = min(p.max_changes, s)
    top = np.argsort(-pc, kind="stable")[:w]
    best = q.argmax(axis=1)
    # greedy baseline: add the top-w columns one by one (all prefixes in one batch)
    sel = np.zeros((w, s), dtype=bool)
    for k in range(w):
        sel[k:, top[k]] = True
    rows = _build_rows(x, cols, V, sel, np.broadcast_to(best, (w, s)))
    P = yield rows
    ok = ctx.valid(P)
    if ok.any():
        k = int(np.argmax(ok))
        pool.append(rows[k : k + 1])
        pool_p.append(P[k : k + 1])
    # B samples of the learned policy, restricted to the top-w columns (||p||_0 <= w)
    pc_w = np.zeros(s)
    pc_w[top] = pc[top]
    sel, ch = sample(pc_w, q, p.n_policy_samples)
    rows = _build_rows(x, cols, V, sel, ch)
    P = yield rows
    ok = ctx.valid(P)
    pool.append(rows[ok])
    pool_p.append(P[ok])
    return np.vstack(pool), np.vstack(pool_p)


# --------------------------------------------------------------------------- stage 2b: GLD
def _radii(R, r):
    K = int(np.clip(np.floor(np.log2(R / (r + 1e-5))), 5, 20))
    return R * 2.0 ** -np.arange(K)


def _gld(ctx, x, cols, values, rng, p, cost):
    """GLD search over the relaxed selection ``a`` and value scores ``b`` (MACE-GLD).

    ``a_i > 0.5`` selects column ``i``; its value is ``argmax b_i``. Per epoch one candidate
    per radius ``R 2^-k`` is evaluated (one batch). Unlike the reference the centre only
    moves to a better candidate (GLD keeps its incumbent); the objective of a valid row is
    its proximity cost, of an invalid row ``1e6 + (1 - p_target)``, which also steers the
    search toward validity before one is found. ``n_starts`` restarts keep the selected
    columns just above the threshold (``a := 0.55 [a >= 0.5]``).
    """
    s = len(cols)
    V, mask = _value_table(values)
    radii = _radii(p.gld_max_radius, p.gld_min_radius)
    nr = len(radii)
    a = np.full(s, 0.5)
    b = np.where(mask, 0.5, -np.inf)
    inc_obj = np.inf
    pool, pool_p = [], []

    def decode(A, Bv):
        sel = _limit_changes(A > 0.5, A, p.max_changes)
        ch = np.where(mask[None], Bv, -np.inf).argmax(axis=2)
        return _build_rows(x, cols, V, sel, ch)

    for start in range(p.gld_num_starts):
        if start > 0:
            a = 0.55 * (a >= 0.5)
            inc_obj = np.inf
        for _ in range(p.n_epochs_gld):
            A = np.clip(a[None, :] + rng.normal(size=(nr, s)) * radii[:, None], 0.0, 1.0)
            Bv = np.clip(
                b[None] + rng.normal(size=(nr,) + b.shape) * radii[:, None, None], 0.0, 1.0
            )
            Bv = np.where(mask[None], Bv, -np.inf)
            rows = decode(A, Bv)
            P = yield rows
            ok = ctx.valid(P)
            pool.append(rows[ok])
            pool_p.append(P[ok])
            obj = np.where(ok, cost(rows), 1e6 + (1.0 - P[:, ctx.target]))
            k = int(np.argmin(obj))
            if obj[k] < inc_obj:
                inc_obj = obj[k]
                a, b = A[k].copy(), Bv[k].copy()
    return np.vstack(pool), np.vstack(pool_p)


# --------------------------------------------------------------------------- fallback
def _greedy(ctx, x, cols, values, p, p_x):
    """Hill-climb: add the single (column, value) change that raises ``p_target`` most.

    One batch per step (all remaining columns and values), at most ``max_changes`` steps;
    stops at the first valid row or when no change improves the probability.
    """
    cur, cur_p = x.copy(), p_x
    free = np.ones(len(cols), dtype=bool)
    for _ in range(min(p.max_changes, len(cols))):
        pairs = [(i, v) for i in np.flatnonzero(free) for v in values[i]]
        if not pairs:
            break
        rows = np.repeat(cur[None], len(pairs), axis=0)
        for r, (i, v) in enumerate(pairs):
            rows[r, cols[i]] = v
        P = yield rows
        ok = ctx.valid(P)
        if ok.any():
            f = np.where(ok, P[:, ctx.target], -np.inf)
            k = int(np.argmax(f))
            return rows[k : k + 1], P[k : k + 1]
        k = int(np.argmax(P[:, ctx.target]))
        if P[k, ctx.target] <= cur_p:
            break
        cur, cur_p = rows[k], P[k, ctx.target]
        free[pairs[k][0]] = False
    return np.zeros((0, x.shape[0])), np.zeros((0, 0))


def _nearest_unlike(ctx, enc, x, neigh):
    """Fallback: the query with every allowed value copied from a desired-class neighbour.

    One batch of ``len(neigh)`` rows; the valid ones are then sparsified. Such rows may
    change more than ``max_changes`` features.
    """
    rows = np.repeat(x[None, :], len(neigh), axis=0)
    for j in range(x.shape[0]):
        ok = enc.allowed(j, x[j], neigh[:, j])
        rows[ok, j] = neigh[ok, j]
    P = yield rows
    ok = ctx.valid(P)
    return rows[ok], P[ok]


def _sparsify(ctx, enc, x, rows, P, max_rounds):
    """Post-hoc sparsity: revert changed features to the query while the row stays valid.

    Each round evaluates every single revert of every row in one batch and applies, per row,
    the valid revert that lowers the proximity cost most; a row with no valid revert is done.
    """
    rows, P = rows.copy(), P.copy()
    active = np.ones(len(rows), dtype=bool)
    for _ in range(max_rounds):
        cand, owner = [], []
        for k in np.flatnonzero(active):
            for j in np.flatnonzero(_changed(rows[k], x)):
                r = rows[k].copy()
                r[j] = x[j]
                cand.append(r)
                owner.append(k)
        if not cand:
            break
        cand = np.vstack(cand)
        owner = np.asarray(owner)
        Pc = yield cand
        ok = ctx.valid(Pc)
        gain = np.where(ok, enc.cost(rows[owner], x) - enc.cost(cand, x), -np.inf)
        moved = False
        for k in np.unique(owner):
            sel = np.flatnonzero(owner == k)
            b = sel[np.argmax(gain[sel])]
            if np.isfinite(gain[b]):
                rows[k], P[k] = cand[b], Pc[b]
                moved = True
            else:
                active[k] = False
        if not moved:
            break
    return rows, P


# --------------------------------------------------------------------------- stage 3
def _rank_cost(enc, rows, x, sparsity_weight):
    """Ranking score of Algorithm 3: proximity cost + ``sparsity_weight`` x changed features."""
    return enc.cost(rows, x) + sparsity_weight * _changed(rows, x[None, :]).sum(axis=1)


def _diverse(enc, x, rows, n_cf, cap, fill, accepted=None, sparsity_weight=0.0):
    """Algorithm 3: closest first, a new change set each time, a column at most ``cap`` times.

    ``rows`` are distinct valid rows. If fewer than ``n_cf`` rows pass and ``fill`` is true,
    the list is filled with the closest rows of a new change set (the per-column cap
    relaxed), then with rows of a known change set but other categorical values;
    ``cap=None`` disables the per-column limit.
    ``accepted`` rows, already chosen, count toward the change sets and column uses.

    Returns
    -------
    chosen : list of int, positions in ``rows``, best first
    """
    cost = _rank_cost(enc, rows, x, sparsity_weight)
    changed = _changed(rows, x[None, :])
    order = np.lexsort((changed.sum(axis=1), cost))
    chosen, seen_sets = [], set()
    uses = np.zeros(x.shape[0], dtype=int)
    if accepted is not None and len(accepted):
        acc = _changed(accepted, x[None, :])
        seen_sets = {a.tobytes() for a in acc}
        uses += acc.sum(axis=0)
    for k in order:
        key = changed[k].tobytes()
        if key in seen_sets:
            continue
        if cap is not None and (uses[changed[k]] >= cap).any():
            continue
        chosen.append(int(k))
        seen_sets.add(key)
        uses[changed[k]] += 1
        if len(chosen) == n_cf:
            return chosen
    if fill:
        # 1. a new change set, ignoring the per-column cap; 2. a known change set with
        # other categorical values. Rows that differ only in continuous values are never
        # added (they would be near-copies once refined).
        cat = np.zeros(x.shape[0], dtype=bool)
        cat[enc.cat_] = True
        acc_rows = [rows[k] for k in chosen] + (list(accepted) if accepted is not None else [])
        seen_cat = {np.where(cat, r, np.nan).tobytes() for r in acc_rows}
        for relax in (1, 2):
            for k in order:
                if len(chosen) == n_cf:
                    return chosen
                if k in chosen:
                    continue
                key = changed[k].tobytes()
                ckey = np.where(cat, rows[k], np.nan).tobytes()
                if (relax == 1 and key in seen_sets) or (relax == 2 and ckey in seen_cat):
                    continue
                chosen.append(int(k))
                seen_sets.add(key)
                seen_cat.add(ckey)
    return chosen


# --------------------------------------------------------------------------- stage 4
def _refine(ctx, enc, x, rows, P, p, rng):
    """Continuous fine-tuning toward the query while staying valid.

    1. Bisection along the segment query -> counterfactual on the changed continuous
       features (``n_bisection`` batched steps, all counterfactuals at once).
    2. Algorithm 4, GLD-search: each changed continuous feature ``i`` is parameterised by
       its fraction ``u_i`` of the gap to the query; ``T`` epochs, one candidate per radius
       ``R 2^-k`` (``R = 0.25`` down to ``r = 0.0005``) per counterfactual, the incumbent
       replaced only by a valid candidate of smaller MAD-scaled distance. ``u_i = 0``
       removes the change.
    Values stay between the query and the original counterfactual value, clipped to the
    feature range, so monotone and range constraints keep holding; integer-typed features
    are rounded before evaluation. A feature missing in the query has no segment to the
    query and is left as it is.
    """
    n, d = rows.shape
    cont = np.zeros(d, dtype=bool)
    cont[enc.cont_] = True
    moved = _changed(rows, x[None, :]) & (cont & ~np.isnan(x))[None, :]
    if not moved.any():
        return rows, P
    gap = np.where(moved, rows - x[None, :], 0.0)
    # lowest fraction allowed by the ranges (the query itself may lie outside a range)
    lo_u = np.zeros((n, d))
    with np.errstate(divide="ignore", invalid="ignore"):
        for bound in (enc.range_low_, enc.range_high_):
            finite = np.isfinite(bound)[None, :] & moved
            need = (bound[None, :] - x[None, :]) / np.where(gap == 0, 1.0, gap)
            outside = (x[None, :] < enc.range_low_[None, :]) | (
                x[None, :] > enc.range_high_[None, :]
            )
            lo_u = np.where(finite & outside & (need > lo_u), np.clip(need, 0, 1), lo_u)
    scale = enc.scales_

    def make(U, rep=1):
        mv, gp, rw = (np.repeat(a, rep, axis=0) for a in (moved, gap, rows))
        return enc.snap(np.where(mv, x[None, :] + U * gp, rw))

    def obj(R):
        # features missing in the query or the row do not move here: they add nothing
        return np.nansum(np.abs(R - x[None, :])[:, cont] / scale[cont], axis=1)

    best_u = np.ones((n, d))
    best_rows, best_P = rows.copy(), P.copy()
    best_obj = obj(best_rows)
    if p.refine in ("both", "bisection"):
        lo = np.zeros(n)
        hi = np.ones(n)
        for _ in range(p.n_bisection):
            mid = 0.5 * (lo + hi)
            U = np.maximum(np.repeat(mid[:, None], d, axis=1), lo_u)
            R = make(U)
            Pm = yield R
            ok = ctx.valid(Pm)
            hi = np.where(ok, mid, hi)
            lo = np.where(ok, lo, mid)
            better = ok & (obj(R) < best_obj)
            best_u[better] = U[better]
            best_rows[better], best_P[better] = R[better], Pm[better]
            best_obj = np.where(better, obj(R), best_obj)
    if p.refine in ("both", "gld"):
        radii = _radii(p.gld_max_radius, p.gld_min_radius)
        nr = len(radii)
        for _ in range(p.n_epochs_refine):
            noise = rng.normal(size=(n, nr, d)) * radii[None, :, None]
            U = np.clip(best_u[:, None, :] + noise, lo_u[:, None, :], 1.0).reshape(n * nr, d)
            R = make(U, nr)
            Pm = yield R
            ok = ctx.valid(Pm).reshape(n, nr)
            o = np.where(ok, obj(R).reshape(n, nr), np.inf)
            k = o.argmin(axis=1)
            better = o[np.arange(n), k] < best_obj
            if better.any():
                pick = np.arange(n)[better] * nr + k[better]
                best_u[better] = U[pick]
                best_rows[better], best_P[better] = R[pick], Pm[pick]
                best_obj[better] = o[np.arange(n), k][better]
    return best_rows, best_P


# --------------------------------------------------------------------------- final stage
def _level_size(sizes, k):
    """Rows of exhaustive level ``k``: the elementary symmetric polynomial ``e_k(sizes)``
    (sum over every ``k`` features of the product of their numbers of values), exact."""
    e = [1] + [0] * k
    for m in sizes:
        for i in range(k, 0, -1):
            e[i] += e[i - 1] * int(m)
    return e[k]


def _level_chunks(x, cols, values, k, chunk_rows):
    """Every row of ``x`` with exactly ``k`` of ``cols`` set to one of their ``values``,
    in chunks of whole feature subsets, at most ``chunk_rows`` rows each (or one subset's
    rows when that is more).

    Yields ``(rows, subset)``: ``subset[r]`` numbers the feature subset of row ``r``.
    """
    buf, owner, n = [], [], 0
    for sid, subset in enumerate(itertools.combinations(range(len(cols)), k)):
        mesh = np.meshgrid(*[values[i] for i in subset], indexing="ij")
        m = mesh[0].size
        if buf and n + m > chunk_rows:
            yield np.vstack(buf), np.concatenate(owner)
            buf, owner, n = [], [], 0
        rows = np.repeat(x[None, :], m, axis=0)
        for i, g in zip(subset, mesh):
            rows[:, cols[i]] = g.ravel()
        buf.append(rows)
        owner.append(np.full(m, sid))
        n += m
    if buf:
        yield np.vstack(buf), np.concatenate(owner)


def _exhaustive(ctx, enc, x, grid, p):
    """Final stage: every sparse change on the grid, one changed feature, then two, ...

    Level ``k`` evaluates every row that changes exactly ``k`` features of the query to
    allowed grid values (immutable features, ranges and monotone directions respected,
    ``k <= max_changes``); the search stops at the first level with a valid row. Level 1
    always runs (``sum_j m_j`` rows, ``m_j`` the allowed values of feature ``j``); the
    levels ``k >= 2`` share a budget of ``exhaustive_max_rows`` rows, and a level whose
    ``e_k(m)`` rows exceed what is left is not run (nor any level above it). Per feature
    subset the ``n_counterfactuals`` closest valid rows are kept.

    Returns
    -------
    rows, proba : valid rows of the first level that has one (possibly 0 rows)
    level : int, the last level searched (0: none)
    skipped : None or (level, n_rows), the first level left out by the cap
    """
    d = x.shape[0]
    cols, values = [], []
    for j, g in enumerate(grid):
        v = g[enc.allowed(j, x[j], g)]
        if v.size:
            cols.append(j)
            values.append(v)
    sizes = [len(v) for v in values]
    searched, skipped = 0, None
    budget = p.exhaustive_max_rows
    for k in range(1, min(p.max_changes, len(cols)) + 1):
        n_rows = _level_size(sizes, k)
        if k >= 2:
            if n_rows > budget:
                skipped = (k, n_rows)
                break
            budget -= n_rows
        keep, keep_p = [], []
        for rows, subset in _level_chunks(x, cols, values, k, p.exhaustive_chunk_rows):
            P = yield rows
            ok = np.flatnonzero(ctx.valid(P))
            if ok.size == 0:
                continue
            cost = enc.cost(rows[ok], x)
            order = np.lexsort((cost, subset[ok]))  # by subset, closest first
            grp = subset[ok][order]
            rank = np.arange(order.size) - np.searchsorted(grp, grp, side="left")
            pick = ok[order[rank < p.n_counterfactuals]]
            keep.append(rows[pick])
            keep_p.append(P[pick])
        searched = k
        if keep:
            return np.vstack(keep), np.vstack(keep_p), k, None
    return np.zeros((0, d)), np.zeros((0, 0)), searched, skipped


# --------------------------------------------------------------------------- one query
def mace_search(enc, x, target, p_x, cols, values, rng, p, min_proba, neigh=None,
                grid=None):
    """All stages for one query and one desired class (a generator).

    Yields internal row batches, receives their probabilities ``(n_rows, n_classes)``.
    Stage 2 (``p.method``), then the greedy fallback, then (``p.fallback``) the
    nearest-unlike fallback, then (``grid`` given) the exhaustive stage on ``grid``, each
    only while no valid row is known; the valid rows then go through the post-hoc
    sparsity pass, Algorithm 3 and the refinement.

    Parameters
    ----------
    p : MaceSettings
    grid : list of 1-D arrays or None
        Candidate values per feature for the exhaustive stage (internal values).

    Returns
    -------
    rows : ndarray of shape (n_cf, d), internal, best first (possibly 0 rows)
    proba : ndarray of shape (n_cf, n_classes)
    info : SearchOutcome
    """
    d = x.shape[0]
    ctx = _Ctx(target, min_proba)
    info = SearchOutcome()
    if len(cols) and len(cols) > p.n_feature_columns:
        cols, values = yield from _select_columns(x, target, cols, values, p)
    pool, pool_p, stage, sparsify = yield from _search_pool(
        ctx, enc, x, p_x, cols, values, rng, p, neigh, grid, info)
    if pool.shape[0] == 0:
        return np.zeros((0, d)), None, info
    info.stage = stage
    pool, first = _unique_rows(pool)
    pool_p = pool_p[first]
    if sparsify:
        n_top = 10 * p.n_counterfactuals
        top = np.argsort(_rank_cost(enc, pool, x, p.sparsity_weight), kind="stable")
        top = top[:n_top]
        sp, sp_p = yield from _sparsify(ctx, enc, x, pool[top], pool_p[top], d)
        pool = np.vstack([sp, pool])
        pool_p = np.vstack([sp_p, pool_p])
        pool, first = _unique_rows(pool)
        pool_p = pool_p[first]
    rows, P = yield from _choose_and_refine(ctx, enc, x, pool, pool_p, rng, p)
    cost = _rank_cost(enc, rows, x, p.sparsity_weight)
    order = np.lexsort((_changed(rows, x).sum(axis=1), cost))
    return rows[order], P[order], info


def _select_columns(x, target, cols, values, p):
    """The ``p.n_feature_columns`` columns the search edits (a generator)."""
    s_max = p.n_feature_columns
    if p.column_selection == "effect":
        # OmniXAI's optional column pruning: every single (column, value) edit of the
        # query in one batch; a column scores its best desired-class probability
        owner = np.concatenate([np.full(len(v), i) for i, v in enumerate(values)])
        edits = np.repeat(x[None, :], len(owner), axis=0)
        edits[np.arange(len(owner)), cols[owner]] = np.concatenate(values)
        Pe = yield edits
        best = np.full(len(cols), -np.inf)
        np.maximum.at(best, owner, Pe[:, target])
        keep = np.lexsort((np.arange(len(cols)), -best))[:s_max]
    else:
        keep = np.arange(s_max)
    keep = np.sort(keep)
    return cols[keep], [values[i] for i in keep]


def _search_pool(ctx, enc, x, p_x, cols, values, rng, p, neigh, grid, info):
    """The valid rows of the first stage that finds any (a generator).

    Returns ``(pool, pool_p, stage, sparsify)``; ``pool`` has 0 rows when no stage
    found one.
    """
    pool, pool_p, stage = np.zeros((0, x.shape[0])), None, None
    if len(cols):
        if p.method == "rl":
            pool, pool_p = yield from _rl(ctx, x, cols, values, rng, p)
        else:
            pool, pool_p = yield from _gld(ctx, x, cols, values, rng, p,
                                           lambda R: enc.cost(R, x))
        stage = p.method
        if pool.shape[0] == 0:
            pool, pool_p = yield from _greedy(ctx, x, cols, values, p, p_x)
            stage = "greedy"
    if pool.shape[0] == 0 and p.fallback and neigh is not None and len(neigh):
        pool, pool_p = yield from _nearest_unlike(ctx, enc, x, neigh)
        stage = "nearest_unlike"
    sparsify = p.sparsify
    if pool.shape[0] == 0 and p.exhaustive and grid is not None:
        pool, pool_p, level, skipped = yield from _exhaustive(ctx, enc, x, grid, p)
        info.exhaustive_levels, info.exhaustive_skipped = level, skipped
        stage = f"exhaustive_{level}"
        # no revert of a row of the first valid level is valid (it is a row of a lower
        # level), so the pre-selection sparsity pass would only cost model rows
        sparsify = False
    return pool, pool_p, stage, sparsify


def _choose_and_refine(ctx, enc, x, pool, pool_p, rng, p):
    """Algorithm 3 on the pool, then the refinement of the chosen rows (a generator).

    Returns at most ``p.n_counterfactuals`` distinct rows and their probabilities.
    """
    d = x.shape[0]
    n_cf = p.n_counterfactuals
    out_rows, out_P = np.zeros((0, d)), np.zeros((0, pool_p.shape[1]))
    used = np.zeros(len(pool), dtype=bool)
    # refinement can make rows equal: refill from the unused pool (at most 3 rounds; the
    # rows of the last round are not refined, so distinct rows stay distinct)
    for rnd in range(3):
        need = n_cf - len(out_rows)
        avail = np.flatnonzero(~used)
        if need <= 0 or avail.size == 0:
            break
        chosen = _diverse(
            enc, x, pool[avail], need, p.diversity_cap, p.fill, out_rows,
            p.sparsity_weight,
        )
        if not chosen:
            break
        idx = avail[chosen]
        used[idx] = True
        rows, P = pool[idx], pool_p[idx]
        if p.refine != "none" and rnd < 2:
            rows, P = yield from _refine(ctx, enc, x, rows, P, p, rng)
            if p.sparsify:
                rows, P = yield from _sparsify(ctx, enc, x, rows, P, d)
        for r, pr in zip(rows, P):
            if not (~_changed(out_rows, r[None, :])).all(axis=1).any():
                out_rows = np.vstack([out_rows, r[None, :]])
                out_P = np.vstack([out_P, pr[None, :]])
    return out_rows[:n_cf], out_P[:n_cf]


# --------------------------------------------------------------------------- driver
def drive(generators, evaluate):
    """Run generators in lock-step; each round evaluates all pending rows in one call.

    Parameters
    ----------
    generators : list of generators (see :func:`mace_search`)
    evaluate : callable, ``(n_rows, d) -> (n_rows, n_classes)``

    Returns
    -------
    results : list of the generators' return values
    n_calls : int, number of ``evaluate`` calls
    n_rows : int, rows evaluated in all
    """
    results = [None] * len(generators)
    pending = {}
    for i, g in enumerate(generators):
        try:
            pending[i] = next(g)
        except StopIteration as stop:
            results[i] = stop.value
    n_calls = n_rows = 0
    while pending:
        keys = list(pending)
        sizes = [pending[k].shape[0] for k in keys]
        P = evaluate(np.vstack([pending[k] for k in keys]))
        n_calls += 1
        n_rows += sum(sizes)
        offs = np.concatenate([[0], np.cumsum(sizes)])
        nxt = {}
        for k, a, b in zip(keys, offs[:-1], offs[1:]):
            try:
                nxt[k] = generators[k].send(P[a:b])
            except StopIteration as stop:
                results[k] = stop.value
        pending = nxt
    return results, n_calls, n_rows
