"""Frontier Shapley: free exactness, exact border strata and an odd-interaction surrogate.

:func:`frontier_shapley` follows the contract of :data:`~sklearn_xai.shapley.ALGORITHMS`:
``fn(game, n_evals, generators, *, return_units=False) -> (phi, base[, units])`` with the
budget ``n_evals`` in coalition evaluations per player and row; the engine
(:func:`~sklearn_xai.shapley.estimate_shapley`) takes its standard errors without units
from :func:`_frontier_estimate`.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from math import comb, floor
from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg.blas import dsyrk
from scipy.linalg.lapack import dpotrf, dpotrs

from .._stats import mean_se, pow2_scale, t_widened, welch_satterthwaite
from ._estimators import (
    FAR_BOUND,
    _check_generators,
    _check_n_evals,
    _far_scale,
    _pair_strata,
    _read_only,
    _root_sum_squares,
    _stratum_masks,
    all_masks,
    shapley_weights,
    unit_std,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from sklearn_xai.shapley._game import Game

__all__ = ["frontier_shapley", "frontier_components", "row_path"]

# jackknife groups of the sampled pairs (at most)
MAX_GROUPS = 20


# --------------------------------------------------------------------------- design

def _systematic(q, rng):
    """Integers n_k in {floor q_k, ceil q_k} with sum(n) = sum(q) (an integer), E n_k = q_k:
    the steps of ``floor(cumsum(q) - u + 1)``, the last point ``round(sum(q))``. In Python
    floats (the same sequential sums as ``np.cumsum``): ``q`` has a few strata, where
    numpy's calls cost four times the arithmetic."""
    u = rng.random()
    out = np.empty(len(q), dtype=np.int64)
    last = len(q) - 1
    c = prev = 0.0
    for k, qk in enumerate(q.tolist()):
        c += qk
        pt = float(round(c)) if k == last else floor(c - u + 1.0)
        out[k] = int(pt - prev)
        prev = pt
    return out


def _k_subsets(Pa, k, count, rng, middle):
    """``count`` distinct pairs of stratum k as masks of one member (Pa,) each."""
    total = comb(Pa, k) // (2 if middle else 1)
    if total <= 4096 or count * 3 > total:
        # enumerate the stratum and draw without replacement
        reps = _stratum_masks(Pa, k, middle)
        return reps[rng.choice(reps.shape[0], size=count, replace=False)]
    seen, rows = set(), []
    while len(rows) < count:
        keys = rng.random((2 * (count - len(rows)) + 8, Pa))
        idx = np.argpartition(keys, k - 1, axis=1)[:, :k]
        masks = np.zeros(keys.shape, dtype=bool)
        np.put_along_axis(masks, idx, True, axis=1)
        for msk in masks:
            if middle and not msk[0]:
                msk = ~msk
            key = msk.tobytes()
            if key not in seen:
                seen.add(key)
                rows.append(msk)
                if len(rows) == count:
                    break
    return np.array(rows)


@lru_cache(maxsize=1024)
def _design_plan(Pa, n_pairs, alloc, unit):
    """What :func:`_design` does not draw: the strata enumerated whole (their ``k``, pair
    count and middle flag, and the weight, stratum, inclusion and extra flags of their
    pairs, in order), and the sampled strata's indices, shares of the pairs left and
    expected counts (in units of ``unit`` pairs when ``unit > 1``)."""
    ks, m, w = _pair_strata(Pa)
    mass = m * w
    a = mass.copy() if alloc in ("kernel", "greedy") else np.where(2 * ks == Pa, 1.0, 2.0)
    full = np.zeros(ks.size, dtype=bool)
    left = n_pairs
    if alloc == "greedy":
        # whole strata from the border inwards while the budget covers them
        for j in range(ks.size):
            if m[j] > left:
                break
            full[j] = True
            left -= int(m[j])
    while True:
        rem = ~full
        if not rem.any():
            break
        q = np.zeros(ks.size)
        q[rem] = left * a[rem] / a[rem].sum()
        grow = rem & (q >= m)
        if not grow.any():
            break
        full |= grow
        left -= int(m[grow].sum())
    enum = tuple((int(ks[j]), int(m[j]), 2 * int(ks[j]) == Pa) for j in np.flatnonzero(full))
    counts = [int(m[j]) for j in np.flatnonzero(full)]
    fixed = (np.repeat(w[full], counts), np.full(sum(counts), -1),
             np.ones(sum(counts)), np.zeros(sum(counts), bool))
    rem = np.flatnonzero(~full)
    share = a[rem] / a[rem].sum() if rem.size else np.zeros(0)
    qu = (left // unit) * share if unit > 1 else None
    q = unit * qu if unit > 1 else left * share
    return enum, _read_only(*fixed), left, _read_only(rem, share, q) + (qu,)


def _design(Pa, n_pairs, rng, alloc="kernel", ht=True, unit=1):
    """Border strata enumerated, the rest sampled (stratified, without replacement).

    Returns the masks of one member of each pair (n_pairs, Pa), the regression weight of
    each pair, the stratum of each pair (-1 where the stratum is enumerated), the
    probability that its stratum is sampled at all, and, with ``unit > 1`` (the
    cross-fit's folds), which pairs are *extra*: the ``< unit`` pairs left over by the
    whole units, drawn after them (without replacement) from the strata that have units,
    in proportion to their mass (from any sampled stratum when none has). The cross-fit
    keeps them in every fold's fit (:func:`_xfit`).
    """
    ks, m, w = _pair_strata(Pa)
    enum, fixed, left, (rem, share, q, qu) = _design_plan(Pa, n_pairs, alloc, unit)
    masks = [_k_subsets(Pa, k, count, rng, middle) for k, count, middle in enum]
    weights, stratum, incl, extra = ([a] for a in fixed)
    if rem.size and left > 0:
        if unit > 1:
            # counts in units (one pair per fold and unit), at most the stratum; then the
            # pairs left over, in proportion to the mass, where the strata have room
            counts = np.minimum(unit * _systematic(qu, rng), m[rem]).astype(np.int64)
            room = m[rem] - counts
            if counts.any():
                room = np.where(counts > 0, room, 0)
            n_extra = int(min(left - counts.sum(), room.sum()))
            qe = np.zeros(rem.size)
            if n_extra:
                qe = _water_fill(n_extra * share, room)
            extras = np.minimum(_systematic(qe, rng), room).astype(np.int64)
        else:
            counts = _systematic(q, rng)
            qe = np.zeros(rem.size)
            extras = np.zeros(rem.size, dtype=np.int64)
        for i, j in enumerate(rem):
            c, e = int(counts[i]), int(extras[i])
            if c + e == 0:
                continue
            k = int(ks[j])
            sub = _k_subsets(Pa, k, c + e, rng, 2 * k == Pa)
            masks.append(sub)
            # Horvitz-Thompson: E[count] = q (+ qe), so the weighted sums are unbiased
            weights.append(np.full(c + e, m[j] * w[j] / (q[i] + qe[i] if ht else c + e)))
            stratum.append(np.full(c + e, j))
            # probability that the stratum is drawn at all (systematic rounding in units)
            incl.append(np.full(c + e, min(1.0, q[i] / unit)))
            extra.append(np.arange(c + e) >= c)
    return (np.concatenate(masks), np.concatenate(weights), np.concatenate(stratum),
            np.concatenate(incl), np.concatenate(extra))


def _pair_masks(S, players, n_players):
    """The coalitions (2 n, n_players) of the pairs whose members over ``players`` are
    ``S`` (n, Pa): each member, then its complement; the other players in neither."""
    masks = np.zeros((2 * S.shape[0], n_players), bool)
    masks[0::2, players] = S
    masks[1::2, players] = ~S
    return masks


def _water_fill(q, cap):
    """``q`` (non-negative, summing to at most ``cap.sum()``) capped at ``cap``, the excess
    shared among the uncapped entries in proportion to ``q``, until none exceeds its cap."""
    q = q.astype(float).copy()
    while True:
        over = q > cap
        if not over.any():
            return q
        excess = (q[over] - cap[over]).sum()
        q[over] = cap[over]
        free = ~over & (q < cap)
        if not free.any() or q[free].sum() == 0:
            return q
        q[free] += excess * q[free] / q[free].sum()


# --------------------------------------------------------------------------- fit

@lru_cache(maxsize=64)
def _esym_pm1(L, max_order):
    """e_m(x) for x in {-1, +1}^L with p entries +1: table E[p, m], m = 0..max_order."""
    E = np.zeros((L + 1, max_order + 1))
    for p in range(L + 1):
        for mm in range(max_order + 1):
            E[p, mm] = sum(comb(p, j) * comb(L - p, mm - j) * (-1) ** (mm - j)
                           for j in range(max(0, mm - (L - p)), min(p, mm) + 1))
    return _read_only(E)[0]


@lru_cache(maxsize=64)
def _triples(Pa):
    """All 3-subsets of range(Pa) as an (F, 3) array."""
    from itertools import combinations
    return _read_only(np.array(list(combinations(range(Pa), 3)), dtype=np.int64).reshape(-1, 3))[0]


def _characters_t(A, sets):
    """The characters ``prod_{i in s} x_i`` of the rows of ``A`` (m, Pa) for each row ``s``
    of ``sets`` (F, k), transposed: (F, m) (gathered by rows of ``A.T``, about twice as
    fast as by columns of ``A``)."""
    At = np.ascontiguousarray(A.T)
    out = At[sets[:, 0]]
    for j in range(1, sets.shape[1]):
        out = out * At[sets[:, j]]
    return out


def _chi3(A, T):
    """Order-3 characters prod_{i in T} x_i of the rows of A (m, Pa) -> (m, F) (a
    transposed view of :func:`_characters_t`)."""
    return _characters_t(A, T).T


@lru_cache(maxsize=64)
def _triple_split(Pa):
    """Each triple ``(a, b, c)`` of :func:`_triples` as ``a`` and the index of ``(b, c)``
    among the pairs of ``range(Pa)`` (``combinations`` order); and the pairs (C2, 2)."""
    from itertools import combinations
    pairs = np.array(list(combinations(range(Pa), 2)), dtype=np.int64).reshape(-1, 2)
    index = np.full((Pa, Pa), -1, dtype=np.int64)
    index[pairs[:, 0], pairs[:, 1]] = np.arange(pairs.shape[0])
    T = _triples(Pa)
    return _read_only(T[:, 0].copy(), index[T[:, 1], T[:, 2]], pairs)


def _pair_products(A):
    """The order-2 characters ``x_a x_b`` of the rows of ``A`` (m, Pa), pairs in
    :func:`_triple_split`'s order, transposed: (C(Pa, 2), m)."""
    return _characters_t(A, _triple_split(A.shape[1])[2])


def _chi3_t_dot(A, alpha, Zt=None):
    """``_chi3(A, _triples(Pa)).T @ alpha`` (F, O) without forming the (m, F) characters:
    ``sum_j alpha_j x_ja (x_jb x_jc)`` as one product of (Pa O, m) by (m, C(Pa, 2));
    ``Zt``: :func:`_pair_products` of ``A``, when the caller has it."""
    m, Pa = A.shape
    first, pair, _ = _triple_split(Pa)
    if Zt is None:
        Zt = _pair_products(A)
    O = alpha.shape[1]
    G = (A[:, :, None] * alpha[:, None, :]).reshape(m, Pa * O).T @ Zt.T  # (Pa O, C2)
    return G.reshape(Pa, O, -1)[first, :, pair]                        # (F, O)


class _TripleVariances:
    """The triples' relative prior variances given one by one, ``tau`` (F,) with mean 1
    (triples in :func:`_triples` order): the general form of the order-3 prior, of which
    the players' activities (a (Pa,) vector, ``tau_T`` in proportion to ``prod_T w``) are
    the product case with a cheaper kernel."""

    __slots__ = ("tau",)

    def __init__(self, tau):
        self.tau = tau


def _odd_kernel(A, pts, orders, activity=None):
    """The surrogate's kernel between the rows of ``A`` (m, Pa) and ``pts`` (p, Pa), both in
    {-1, +1}: ``sum_k e_k(a * x) / C(Pa, k)`` over the odd ``orders`` -> (m, p).

    ``activity`` (Pa,) (``orders == (3,)``): the triples' prior variances in proportion to
    the products of their players' activities, ``tau_T = prod_T(w) / mean``: the kernel
    ``e_3(w * a * x) / e_3(w)``, by Newton's identities from two products. A
    :class:`_TripleVariances`: ``sum_T tau_T chi_T(a) chi_T(x) / F`` from the characters.
    """
    if isinstance(activity, _TripleVariances):
        T = _triples(pts.shape[1])
        Zp = _chi3(pts, T)
        Za = Zp if A is pts else _chi3(A, T)
        return (Za * (activity.tau / T.shape[0])) @ Zp.T
    if activity is not None:
        w = activity
        p1 = (A * w) @ pts.T
        p3 = (A * (w * w * w)) @ pts.T
        p2 = float(w @ w)                            # (w a x)_i^2 = w_i^2 on {-1, +1}
        # e_3 = (p1^3 - 3 p1 p2 + 2 p3) / 6 (products: ** on arrays is a slow pow)
        return (p1 * (p1 * p1 - 3.0 * p2) + 2.0 * p3) * (1.0 / (6.0 * _e3(w)))
    Pa = pts.shape[1]
    E = _esym_pm1(Pa, max(orders))
    agree = ((A @ pts.T + Pa) / 2).round().astype(np.int64)   # count of +1 in x*x'
    K = np.zeros(agree.shape)
    for k in orders:
        K += E[agree, k] / comb(Pa, k)
    return K


def _kernel_shapley(pts, orders, activity=None):
    """Shapley values (p, Pa) of the kernel's functions ``k(x_j, .)`` of the points
    ``pts`` (p, Pa) (see :func:`_odd_kernel`): ``sum_k (2/k) x_ji e_{k-1}(x_j without i) /
    C(Pa, k)``, with ``activity`` ``(2/3) z_ji e_2(z_j without i) / e_3(w)``, ``z = w x``;
    the fit ``sum_j alpha_j k(x_j, .)`` has Shapley values ``D.T @ alpha``; with a
    :class:`_TripleVariances` ``(2/3) sum_{T ni i} tau_T chi_T(x_j) / F``."""
    if isinstance(activity, _TripleVariances):
        return _triple_kernel_parts(pts, activity, gram=False)[1]
    if activity is not None:
        z = pts * activity
        e1 = z.sum(axis=1, keepdims=True)
        e2 = (e1**2 - np.sum(activity**2)) / 2.0
        return (2.0 / 3.0) * z * (e2 - z * (e1 - z)) / _e3(activity)
    Pa = pts.shape[1]
    pos = ((pts + 1) / 2).astype(np.int64)                         # (p, Pa)
    p_minus = pos.sum(axis=1, keepdims=True) - pos                 # +1 count without i
    Em = _esym_pm1(Pa - 1, max(orders))
    D = np.zeros(pts.shape)
    for k in orders:
        D += (2.0 / k) * pts * Em[p_minus, k - 1] / comb(Pa, k)
    return D


def _triple_kernel_parts(pts, prior, gram=True, chars=None):
    """:func:`_odd_kernel` of ``pts`` (p, Pa) with themselves (None without ``gram``) and
    :func:`_kernel_shapley` of ``pts`` for a :class:`_TripleVariances` ``prior``, from one
    computation of their characters (``chars``, (p, F), when the caller has them)."""
    Pa = pts.shape[1]
    Z = _chi3(pts, _triples(Pa)) if chars is None else chars
    Zs = Z * (prior.tau / Z.shape[1])
    return (Zs @ Z.T if gram else None), (2.0 / 3.0) * (Zs @ _incidence(Pa))


def _gram(X, orders, activity=None, chars=None):
    """:func:`_odd_kernel` of the pairs ``X`` (n, Pa) and the full coalition, ``[X; 1]``,
    with themselves (n + 1, n + 1), and :func:`_kernel_shapley` of ``[X; 1]`` (n + 1, Pa)
    as :func:`_fit_row` computes it (the activity only with ``orders == (3,)``): the
    kriging fit's, whose slices the cross-fit's folds take."""
    P1 = np.vstack([X, np.ones((1, X.shape[1]))])
    if isinstance(activity, _TripleVariances) and tuple(orders) == (3,):
        return _triple_kernel_parts(P1, activity, chars=chars)
    return (_odd_kernel(P1, P1, orders, activity),
            _kernel_shapley(P1, orders, activity if tuple(orders) == (3,) else None))


def _e3(w):
    """The third elementary symmetric polynomial of the vector ``w``."""
    p1, p2, p3 = w.sum(), (w**2).sum(), (w**3).sum()
    return (p1**3 - 3.0 * p1 * p2 + 2.0 * p3) / 6.0


@lru_cache(maxsize=64)
def _incidence(Pa):
    """(F, Pa): 1 where the player belongs to the triple (:func:`_triples` order)."""
    T = _triples(Pa)
    out = np.zeros((T.shape[0], Pa))
    out[np.repeat(np.arange(T.shape[0]), 3), T.ravel()] = 1.0
    return _read_only(out)[0]


@lru_cache(maxsize=64)
def _triangle(Pa):
    """(F, 3): the indices among :func:`_triple_split`'s pairs of each triple's three pairs."""
    _, _, pairs = _triple_split(Pa)
    index = np.zeros((Pa, Pa), dtype=np.int64)
    index[pairs[:, 0], pairs[:, 1]] = np.arange(pairs.shape[0])
    T = _triples(Pa)
    return _read_only(np.stack([index[T[:, 0], T[:, 1]], index[T[:, 0], T[:, 2]],
                                index[T[:, 1], T[:, 2]]], axis=1))[0]


def _triple_prior(activity, Pa):
    """Relative prior variances (F,) of the triples of :func:`_triples`: ones, or with
    ``activity`` (Pa,) the products of their players' activities over their mean (a
    :class:`_TripleVariances`: its own)."""
    T = _triples(Pa)
    if isinstance(activity, _TripleVariances):
        return activity.tau
    if activity is None:
        return np.ones(T.shape[0])
    prod = activity[T[:, 0]] * activity[T[:, 1]] * activity[T[:, 2]]
    return prod * (T.shape[0] / _e3(activity))


def _fit_row(X, y, W, yN, orders, ratio, predict=False, ard=0, lam=0.9, primal=None,
             prior=None, gram=None, design=None, activity=None, kshap=None, memo=None,
             ard_pool=False):
    """Shapley values of the fitted odd part: linear + kernel of odd orders (universal kriging).

    X : (n, Pa) in {-1, +1}; y : (n, O) odd values (v(S) - v(~S)) / 2; W : (n,) weights;
    yN : (O,) = (v(all) - v(empty)) / 2, imposed exactly. The odd part is modelled as
    ``x.b + g(x)``, ``g`` with kernel ``sum_k gamma_k e_k(x * x')`` over the odd ``orders``
    (each normalized by C(Pa, k)), ``b`` unpenalized; the misfit variance of pair ``c`` is
    ``mean(W) / (ratio W_c)``. Returns phi (Pa, O) = Shapley values of the fit, and with
    ``predict=True`` also a function giving the fitted odd part at new points (m, Pa).

    ``ard`` > 0 (with ``orders == (3,)``): that many rounds of automatic relevance
    determination of the triples: the prior variance of triple ``T`` becomes ``(1 - lam) +
    lam e_T / mean(e)``, ``e_T`` the squared posterior coefficient of the previous round
    (an adaptive ridge, approaching a sparse fit); only the ``n + 1`` largest get their own
    variance, the others keep ``1 - lam``. ``ard_pool``: a triple's ``e_T`` pooled with
    its pairs' (:func:`_pair_pooled`; the sparse-recovery regime, :func:`_sparse_recovery`).

    ``primal``: solve the same problem in its primal form (:func:`_fit_row_primal`;
    ``orders == (3,)`` only); ``None`` when it is the cheaper (more pairs than
    coefficients).

    ``prior`` (F,) (``orders == (3,)``, kriging form, no ARD): the triples' relative prior
    variances instead of equal ones (1 each), e.g. an oracle's support; 0 leaves a triple
    out of the fit.

    ``activity`` (Pa,) positive (``orders == (3,)``): the triples' prior variances in
    proportion to the products of their players' activities (:func:`_row_activity`)
    instead of equal; ARD's rounds then keep ``(1 - lam)`` times these.

    ``gram`` (n + 1, n + 1): :func:`_odd_kernel` of ``[X; 1]`` with itself (kriging form),
    ``design`` (n, Pa + F): ``[X, chi3(X)]`` (primal form), when the caller has them (the
    cross-fit's folds share one); with ``predict=True`` the returned function takes the
    same of its points as an optional second argument (their kernel with ``[X; 1]``, or
    their ``[Xq, chi3(Xq)]``). ``kshap`` (n + 1, Pa): :func:`_kernel_shapley` of ``[X;
    1]`` (kriging form without ARD), when the caller has it.

    ``memo`` (a dict; kriging form, no ``prior``, no ARD): the parts that depend on the
    design alone (the gram, the kernel Shapley values, the covariance's factors) are kept
    there for the next row of the same design (:func:`_shared_rowwise`).
    """
    n, Pa = X.shape
    Wn = W / W.mean()
    if not orders or ratio == 0:
        phi = _linear_row(X, y, Wn, yN)
        return (phi, lambda Xq, feats=None: Xq @ (phi / 2.0)) if predict else phi
    if primal is None:
        primal = not _uses_kernel(orders, ratio, n, Pa)
    if primal:
        # more pairs than coefficients: the same fit in its primal form, cheaper
        return _fit_row_primal(X, y, Wn, yN, ratio, predict, ard, lam, design, activity,
                               ard_pool)
    if tuple(orders) != (3,):
        activity = None
    pts = np.vstack([X, np.ones((1, Pa))])

    def kern(A):
        return _odd_kernel(A, pts, orders, activity)

    F = pts
    Y = np.vstack([y, yN[None, :]])

    FY = np.hstack([F, Y])
    noise = 1.0 / Wn

    def krige(K, key=None):
        return _krige(K, FY, Pa, noise, ratio, memo if key else None, key)

    if prior is not None:
        T = _triples(Pa)
        scale = np.asarray(prior, dtype=np.float64) / T.shape[0]
        sel = scale > 0
        Xs = _chi3(pts, T[sel])
        b, alpha = krige((Xs * scale[sel]) @ Xs.T)
        beta = np.zeros((T.shape[0], Y.shape[1]))
        beta[sel] = scale[sel][:, None] * (Xs.T @ alpha)
        return _order3_result(b, beta, T, predict)
    if gram is None and kshap is None and isinstance(activity, _TripleVariances):
        gram, kshap = _triple_kernel_parts(pts, activity)
    use_memo = memo is not None and not (ard and tuple(orders) == (3,))
    if use_memo and gram is None:
        gram, kshap = _memoized(memo, "gram", lambda: _gram(X, orders, activity))
    K = kern(pts) if gram is None else gram
    b, alpha = krige(K, "full" if use_memo else None)
    if ard and tuple(orders) == (3,):
        T = _triples(Pa)
        Fn = T.shape[0]
        tau = base = _triple_prior(activity, Pa)
        Zt = _pair_products(pts)                   # the same points in every round
        for _ in range(ard):
            e = (((tau / Fn)[:, None] * _chi3_t_dot(pts, alpha, Zt)) ** 2).sum(axis=1)
            if ard_pool:
                e = _pair_pooled(e, Pa)
            tau, new, sel = _ard_variances(e, lam, n + 1, base)
            Xs = _chi3(pts, T[sel])                                 # (n+1, n+1)
            b, alpha = krige(_syrk_lower(Xs * np.sqrt(new[sel] / Fn), K, 1.0 - lam))
        beta = (tau / Fn)[:, None] * _chi3_t_dot(pts, alpha, Zt)   # (F, O)
        return _order3_result(b, beta, T, predict)
    if kshap is None:
        kshap = _kernel_shapley(pts, orders, activity)
    phi = 2.0 * b + kshap.T @ alpha
    if not predict:
        return phi
    return phi, lambda Xq, feats=None: Xq @ b + (kern(Xq) if feats is None else feats) @ alpha


def _memoized(memo, key, compute):
    """``compute()``, kept in ``memo[key]`` for the next row of a design fitted row by row
    (:func:`_shared_rowwise`); computed afresh when ``memo`` is None."""
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _krige(K, FY, Pa, noise, ratio, memo=None, key=None):
    """Universal kriging of ``FY = [F, Y]`` ((n + 1, Pa + O): the points with the full
    coalition last, and their values) with kernel ``K`` (n + 1, n + 1) times ``ratio``
    plus ``noise`` (n,) on the first ``n`` diagonal entries (the full coalition is
    noise-free): the linear coefficients ``b`` (Pa, O) and the kernel weights ``alpha``
    (n + 1, O). Only the lower triangle of ``K`` is read.

    ``memo`` (a dict) and ``key``: the parts that do not depend on ``Y`` (the factor of
    the covariance, ``C^-1 F`` and the factor of ``F' C^-1 F``) are kept in ``memo[key]``
    and reused by the next call with that key (``K`` may then be None): the rows of a
    shared design fitted one by one (:func:`_shared_rowwise`) factor each matrix once.
    Every call with a memo solves ``Y`` on its own (the same arithmetic whether the parts
    were kept or just computed)."""
    F = FY[:, :Pa]
    if memo is None:
        CiFY = _spd_solve(_covariance(K, noise, ratio), FY)
        CiF, CiY = CiFY[:, :Pa], CiFY[:, Pa:]
        b = _spd_solve(F.T @ CiF, F.T @ CiY)                       # (Pa, O)
        return b, (CiY - CiF @ b) * ratio
    if key not in memo:
        solve_C = _SpdSolver(_covariance(K, noise, ratio))
        CiF = solve_C(F)
        memo[key] = (solve_C, CiF, _SpdSolver(F.T @ CiF))
    solve_C, CiF, solve_b = memo[key]
    CiY = solve_C(FY[:, Pa:])
    b = solve_b(F.T @ CiY)                                         # (Pa, O)
    return b, (CiY - CiF @ b) * ratio


def _covariance(K, noise, ratio):
    """``ratio K`` plus ``noise`` (n,) on the first ``n`` diagonal entries (a new array)."""
    n = noise.shape[0]
    C = K * ratio
    C[np.arange(n), np.arange(n)] += noise
    return C


class _SpdSolver:
    """``A^-1 B`` for any number of ``B`` of one symmetric positive definite ``A`` (its
    lower triangle read): LAPACK's Cholesky factor kept, or least squares where ``A`` is
    not numerically positive definite."""

    __slots__ = ("L", "A")

    def __init__(self, A):
        # LAPACK's Cholesky directly: the fits are small and many, and numpy's wrappers
        # cost as much as the arithmetic
        L, info = dpotrf(A, lower=1, clean=0)
        self.L, self.A = (None, A) if info else (L, None)

    def __call__(self, B):
        if self.L is None:
            return np.linalg.lstsq(_from_lower(self.A), B, rcond=None)[0]
        return dpotrs(self.L, B, lower=1)[0]


def _cholesky_solve(A, B):
    """``A^-1 B`` by :class:`_SpdSolver`'s Cholesky factor; None when ``A`` is not
    numerically positive definite (the caller has its own fallback). Only the lower
    triangle of ``A`` is read."""
    solve = _SpdSolver(A)
    return None if solve.L is None else solve(B)


def _spd_solve(A, B):
    """``A^-1 B`` by :class:`_SpdSolver` (Cholesky, or least squares when ``A`` is not
    numerically positive definite)."""
    return _SpdSolver(A)(B)


def _from_lower(A):
    """The symmetric matrix whose lower triangle is ``A``'s (see :func:`_syrk_lower`)."""
    return np.tril(A) + np.tril(A, -1).T


def _syrk_lower(A, C=None, beta=0.0):
    """The lower triangle of ``A @ A.T + beta * C`` (symmetric rank-k update, half the
    products of ``A @ A.T``); the upper triangle is left as ``C``'s (zeros without ``C``):
    for :func:`_cholesky_solve` and :func:`_spd_solve`, which read the lower."""
    A = np.asarray(A, dtype=np.float64)
    if C is None:
        return dsyrk(1.0, A, lower=1)
    return dsyrk(1.0, A, beta=beta, c=C, lower=1)


def _fit_row_primal(X, y, Wn, yN, ratio, predict, ard, lam, design=None, activity=None,
                    ard_pool=False):
    """:func:`_fit_row` with ``orders=(3,)`` in its primal form, for more pairs than
    coefficients: ``y ~ X b + chi3(X) beta`` with ``b`` unpenalized, ``beta_T ~ N(0,
    ratio tau_T / F)`` (``F = C(Pa, 3)``, ``tau = 1``, then the ARD rounds' variances),
    misfit variance ``1 / Wn``, and the full coalition fitted exactly (a Lagrange
    multiplier): the posterior mean the kriging form computes, at ``O(n F^2)`` instead of
    ``O(n^3)``."""
    n, Pa = X.shape
    T = _triples(Pa)
    Fn = T.shape[0]
    A = np.hstack([X, _chi3(X, T)]) if design is None else design  # (n, Pa + F)
    G = _syrk_lower((A * np.sqrt(Wn)[:, None]).T)                 # lower triangle
    rhs = (A * Wn[:, None]).T @ y                                 # (Pa + F, O)
    a = np.ones(Pa + Fn)                                          # the full coalition
    m = Pa + Fn

    pen = np.arange(Pa, m)
    rhs_a = np.hstack([rhs, a[:, None]])

    def solve(tau):
        # min theta' H theta - 2 theta' rhs subject to a' theta = yN, H = G + penalty:
        # theta = H^-1 (rhs - a lam), lam from the constraint (Cholesky of H; the
        # bordered system by least squares when H is not numerically positive definite)
        H = G.copy()
        H[pen, pen] += Fn / (ratio * tau)
        Z = _cholesky_solve(H, rhs_a)
        if Z is not None:
            Hr, Ha = Z[:, :-1], Z[:, -1]
            lam_ = (a @ Hr - yN) / (a @ Ha)                           # (O,)
            theta = Hr - np.outer(Ha, lam_)
        else:
            M = np.zeros((m + 1, m + 1))
            M[:m, :m] = _from_lower(H)
            M[:m, m] = M[m, :m] = a
            theta = np.linalg.lstsq(M, np.vstack([rhs, yN[None, :]]), rcond=None)[0][:m]
        return theta[:Pa], theta[Pa:m]

    tau = base = _triple_prior(activity, Pa)
    bl, beta = solve(tau)
    for _ in range(ard):
        e = (beta**2).sum(axis=1)
        tau = _ard_variances(_pair_pooled(e, Pa) if ard_pool else e, lam, n + 1, base)[0]
        bl, beta = solve(tau)
    if not predict:
        return _order3_result(bl, beta, T, False)
    phi, pred = _order3_result(bl, beta, T, True)
    theta = np.vstack([bl, beta])
    return phi, lambda Xq, feats=None: pred(Xq) if feats is None else feats @ theta


def _ard_variances(e, lam, n_keep, base=None):
    """One ARD round: relative prior variances ``tau`` of the triples from their squared
    coefficients ``e`` (the ``n_keep`` largest get ``(1 - lam) base + lam e / mean(e)``,
    the others ``(1 - lam) base``; ``base`` the prior's, ones by default), the new shares
    and the kept triples."""
    new = lam * e / max(e.mean(), 1e-300)
    sel = np.argsort(new)[::-1][:n_keep]
    tau = (1.0 - lam) * (np.ones(e.shape[0]) if base is None else base)
    tau[sel] += new[sel]
    return tau, new, sel


def _pair_pooled(e, Pa):
    """The triples' ARD relevance (F,) in the sparse-recovery regime: the geometric mean
    of each triple's own squared coefficient ``e_T`` and the geometric mean of its three
    pairs' totals (a pair's total: ``e`` summed over the triples that hold it).

    Heredity again: players that interact in one triple tend to in others (a dividend of
    four or five players puts an odd coefficient on every triple inside it; a tree's
    path on every triple of its features), so a triple whose pairs carry weight elsewhere
    is more likely relevant; the pooled evidence is less noisy than ``e_T`` alone when
    the pairs are fewer than the unknowns. ``e`` is over :func:`_triples` (``Pa``)."""
    pairs = _triple_pairs(Pa)
    total = sum(np.bincount(at, e, Pa * Pa) for at in pairs)
    # cube roots before the product: three small totals would underflow
    return np.sqrt(e) * np.sqrt(np.prod([np.cbrt(total[at]) for at in pairs], axis=0))


@lru_cache(maxsize=64)
def _triple_pairs(Pa):
    """The three pairs of each of :func:`_triples` (``Pa``) as codes ``i * Pa + j``,
    ``i < j``: three (F,) arrays (kept: every ARD round of every row pools with them)."""
    T = _triples(Pa)
    return _read_only(*(T[:, a] * Pa + T[:, b] for a, b in ((0, 1), (0, 2), (1, 2))))


def _order3_result(b, beta, T, predict):
    """Shapley values of ``x.b + chi3(x).beta`` (each triple's odd coefficient splits
    ``2/3`` to each member) and, with ``predict``, the fitted function."""
    phi = 2.0 * b
    for c in range(3):
        np.add.at(phi, T[:, c], (2.0 / 3.0) * beta)
    if not predict:
        return phi
    # (the optional second argument of the fits' predictors is not needed here)
    return phi, lambda Xq, feats=None: Xq @ b + _chi3(Xq, T) @ beta


def _linear_row(X, y, W, yN):
    """min sum W (y - X b)^2 subject to sum(b) = yN; phi = 2 b (paired KernelSHAP)."""
    Pa = X.shape[1]
    A = X[:, :-1] - X[:, -1:]
    rhs = y - X[:, -1:] * yN[None, :]
    sw = np.sqrt(W)[:, None]
    sol = np.linalg.lstsq(A * sw, rhs * sw, rcond=None)[0]
    b = np.empty((Pa, y.shape[1]))
    b[:-1] = sol
    b[-1] = yN - sol.sum(axis=0)
    return 2.0 * b


@lru_cache(maxsize=4)
def _exact_coefs(Pa):
    """Exact Shapley coefficients on the 2**Pa - 2 non-trivial coalitions and the two ends."""
    masks = all_masks(Pa)
    sizes = masks.sum(axis=1)
    w = np.append(shapley_weights(Pa), 0.0)
    coef = np.where(masks, w[np.maximum(sizes - 1, 0)][:, None], -w[sizes][:, None])  # (2^Pa, Pa)
    return _read_only(masks[1:-1], coef[1:-1], coef[0], coef[-1])


# --------------------------------------------------------------------------- estimator

DEFAULTS = {"alloc": "greedy", "orders": (3,), "ratio": 100.0, "ht": True,
            "mode": "hybrid", "folds": 4, "ard": 2, "lam": 0.9, "ard_min": 8,
            "ard_long": 5, "ard_long_min": 16, "ard_long_share": 0.5, "ard_pool": "pairs",
            "bias_w": 1.0, "bias_sub": 1.0, "border_c": 0.5, "se_scale": 1.0,
            "se_mode": "auto", "k2_min": 0.7, "k2_max": 1.0, "by_component": True, "pool": True,
            "linear_below": 2, "prior": "pairs", "activity_floor": 0.05,
            "pair_floor": 0.0, "pair_prior_max": 1140,
            "pool_by": "interactions", "ard_max_players": 64, "max_unknowns": 2048}


# the string knobs and their values (the numeric ones are the benchmarks' to set)
_CHOICES = {"alloc": ("greedy", "kernel", "uniform"), "mode": ("hybrid", "xfit", "fit"),
            "se_mode": ("auto", "max", "pooled"), "prior": ("pairs", "activity", "flat"),
            "pool_by": ("interactions", "size"), "ard_pool": ("pairs", "none")}


def _config(config):
    """:data:`DEFAULTS` updated by the caller's knobs; an unknown knob is a
    ``TypeError`` and an unknown value of a string knob a ``ValueError``, both naming
    the valid ones (a misspelt knob would otherwise be silently ignored)."""
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"unknown frontier knob(s) {unknown}; the knobs are "
                        f"{sorted(DEFAULTS)}.")
    for key, valid in _CHOICES.items():
        if key in config and config[key] not in valid:
            raise ValueError(f"{key} must be one of {list(valid)}; got {config[key]!r}.")
    return dict(DEFAULTS, **config)


def _row_activity(S, vS, vC, v0, v1, floor, known=None):
    """Each player's activity (Pa,) from the size-1 pairs: ``|A_i| = |v(all) - v(all - i)
    - v({i}) + v(empty)|``, the sum of the player's dividends of order two and more (the
    norm over outputs), plus ``floor`` times the largest; None when the pairs ``S`` lack a
    size-1 pair or every ``A_i`` is 0.

    A triple's odd coefficient comes from dividends that hold all three of its players, so
    a player without higher-order dividends has none: the order-3 prior in proportion to
    the product of its players' activities (heredity) spends the surrogate's freedom on
    the players that interact. ``vS`` / ``vC``: the values of each pair's coalition and
    of its complement; ``known`` (Pa,): the ``|A_i|`` already computed from these pairs
    (a component whose border pairs were evaluated first, :func:`_frontier_rows`).
    """
    Pa = S.shape[1]
    one = S.sum(axis=1) == 1
    if int(one.sum()) != Pa:
        return None
    if known is None:
        a = np.zeros(Pa)
        a[S[one].argmax(axis=1)] = _activities(vS[one], vC[one], v0, v1)
    else:
        a = known
    top = a.max()
    if not top > 0:
        return None
    return a + floor * top


def _pair_magnitudes(X, vS, vC, v0, v1, activity, ratio, primal=None, products=None):
    """The row's order-2 Walsh coefficients kriged from the pairs' even parts: ``|c_ij|``
    (C(Pa, 2),) over their largest (the norm over the outputs; pairs in
    :func:`_triple_split`'s order), or None when they are all 0.

    A pair gives the even part ``(v(S) + v(~S)) / 2`` too, which the Shapley values ignore
    but which tells where the interactions are: a dividend on ``D`` puts order-2
    coefficients on every pair in ``D`` as it puts order-3 ones on every triple. The even
    part less the ends' mean, ``sum_{|U| even} c_U (chi_U(x) - 1)``, is fitted by its
    order-2 terms alone with prior variances ``w_i w_j`` (``w`` the players' ``activity``,
    (Pa,)) and misfit variance ``1 / ratio`` of their mean: ``C(Pa, 2)`` unknowns on ``n``
    values, the size-1 pairs among them (each the sum of a player's ``c_ij``, its
    activity), in the kriging form (``n x n``) or the primal one (``C(Pa, 2)`` square),
    whichever is smaller unless ``primal`` says. X : (n, Pa) in {-1, +1}; vS / vC : (n, O)
    the values of each pair's coalition and of its complement; v0 / v1 : (O,) the ends;
    ``products`` (n, C(Pa, 2)): ``_pair_products(X).T``, when the caller has it.
    """
    n, Pa = X.shape
    _, _, pairs = _triple_split(Pa)
    C2 = pairs.shape[0]
    if products is None:
        products = _pair_products(X).T
    Phi = products - 1.0                                # (n, C2): -2 where i, j are split
    pv = activity[pairs[:, 0]] * activity[pairs[:, 1]]
    pv = pv / pv.mean()
    z = ((vS - v0) + (vC - v1)).reshape(n, -1) / 2.0    # the even part less the ends' mean
    z = z / pow2_scale(z)                              # exact; values far from 1
    if primal is None:
        primal = n > C2
    if primal:
        G = _syrk_lower(Phi.T * np.sqrt(ratio))
        G[np.arange(C2), np.arange(C2)] += 1.0 / pv
        c = _spd_solve(G, ratio * (Phi.T @ z))            # (C2, O)
    else:
        K = _syrk_lower(Phi * np.sqrt(pv))
        K[np.arange(n), np.arange(n)] += 1.0 / ratio
        c = pv[:, None] * (Phi.T @ _spd_solve(K, z))
    mag = np.abs(c[:, 0]) if c.shape[1] == 1 else _root_sum_squares(c, axis=1)
    top = mag.max()
    return mag / top if top > 0 else None


def _pair_prior(mag, activity, floor):
    """The triples' prior variances (:class:`_TripleVariances`) below ARD's budget:
    ``tau_T`` in proportion to ``sqrt(prod_T w) * (prod_{ij in T} (m_ij + floor))**(1/3)``,
    ``w`` the players' ``activity`` (Pa,) and ``m`` :func:`_pair_magnitudes`: a triple whose
    three pairs interact is the likelier; the geometric mean of the activities' prior and
    the pairs' keeps the activities where the pairs say little (measured,
    ``doc/benchmarks.md``)."""
    Pa = activity.shape[0]
    _, _, pairs = _triple_split(Pa)
    # tau_T = prod over the triple's pairs of (w_i w_j)**(1/4) (m_ij + floor)**(1/3)
    # (each player is in two of them); of exact ratios, so that it does not depend on
    # the values' scale
    w = activity / activity.max()
    M = np.sqrt(np.sqrt(w[pairs[:, 0]] * w[pairs[:, 1]])) * np.cbrt(mag + floor)
    tau = M[_triangle(Pa)].prod(axis=1)
    return _TripleVariances(tau / tau.mean())


def _activities(vS, vC, v0, v1):
    """``|v(all) - v(all - i) - v({i}) + v(empty)|`` (its norm over the outputs) of each
    size-1 pair: ``vS`` / ``vC`` (m, n_outputs) the values of ``{i}`` and ``all - i``,
    ``v0`` / ``v1`` the ends, (n_outputs,) or one row per pair."""
    A = (v1 - vC - (vS - v0)).reshape(vS.shape[0], -1)
    if A.shape[1] == 1:
        return np.abs(A[:, 0])            # the norm of one output (sqrt(A**2) to the bit)
    return _root_sum_squares(A, axis=1)


def _border_row(S, vS, vC, v0, v1, c):
    """Shapley values from the size-1 pair stratum alone (include-one / leave-one-out).

    With ``d_i = v({i}) - v(empty)`` (the player's own dividend) and ``A_i = v(all) -
    v(all - i) - d_i`` (the sum of its higher-order dividends), ``phi_i = d_i + sum_T
    d_T / |T|`` over the higher-order ``T`` containing ``i``: ``d_i + c A_i`` with ``c``
    between ``1 / Pa`` and ``1/2``. The estimate is ``d_i + c A_i`` with the efficiency gap
    spread in proportion to ``|A_i|`` (the uncertainty of the split of ``A_i`` over the
    orders scales with it); where the ``A_i`` share a sign this is ``d_i + c* A_i`` with
    ``c*`` set by efficiency. ``c = 1/2`` keeps games with at most pairwise interactions
    exact (their gap is 0); paired KernelSHAP is ``c = 1/2`` with the gap spread equally
    (measured, quick benchmark, error ratio to shapiq's best: 0.87/0.95/0.99 -> 0.44/0.83/
    0.95 on Adult-bg16/German/dividend32; ``c = 0.45``: 0.43/0.84/0.80, not exact).
    """
    i = S.argmax(axis=1)
    d = np.zeros((S.shape[1],) + v0.shape)
    A = np.zeros_like(d)
    d[i] = vS - v0[None]
    A[i] = v1[None] - vC - d[i]
    phi = d + c * A
    gap = (v1 - v0) - phi.sum(axis=0)
    w = np.abs(A)
    tot = w.sum(axis=0)
    share = np.where(tot > 0, w / np.where(tot > 0, tot, 1.0), 1.0 / S.shape[1])
    return phi + gap[None] * share


def frontier_shapley(game: Game, n_evals: int,
                     generators: Sequence[np.random.Generator] | None, *,
                     return_units: bool = False, paths: list | None = None,
                     dof: list | None = None, design_seed: int | None = None,
                     **config: Any) -> tuple[np.ndarray | None, ...]:
    """Shapley values with free exactness, exact border strata and an odd surrogate.

    **A mean of games is estimated component by component.** When the game is a mean of
    ``K`` component games (``game.imputation_components()``: an :class:`ImputationGame`
    with ``K`` background rows or knockoffs), each component is estimated on its own, with
    its own design drawn from the row's generator, by the steps below
    (:func:`frontier_components`), and the estimate is their mean. A coalition of a
    component costs one model row, ``1 / K`` of a coalition of the mean, so each
    component gets ``n_evals`` per player: the same model rows as one design on the mean
    game. It pays twice: a component's dummies are the players whose columns equal *its*
    imputation row (many more than those equal to every row), so small components are
    enumerated exactly; and the components' independent errors average out. Their
    standard errors combine as ``sqrt(sum_k se_k^2) / K``. Measured on the benchmark games
    with 16 background rows (``doc/benchmarks.md``): 1.3-14x lower error than one
    design on the mean game, at equal model rows. ``by_component=False`` (a config knob)
    turns it off.

    Per row (per component):

    1. **Dummies.** Players that cannot change the row's value (``game.active_players()``
       when the game has it, e.g. an :class:`ImputationGame` whose row equals every
       imputation row on the player's columns) get exactly 0 and are left out.
    2. **Exact when affordable.** When the reduced game's ``2**Pa - 2`` non-trivial
       coalitions fit in the row's budget (``n_evals * P``) they are all evaluated and the
       Shapley values are exact.
    3. **Otherwise** ``n_evals * P // 2`` complementary pairs over the active players:
       whole pair strata ``{|S| = k or Pa - k}`` are enumerated from the border inwards
       while the budget covers them; then while the budget shared out in proportion to
       their Shapley-kernel mass covers them (water-filling); the remaining pairs are
       shared out among the remaining strata in proportion to their mass (systematic
       rounding) and drawn without replacement within each, each weighing
       ``mass / expected count``. A pair gives the
       odd part ``(v(S) - v(~S)) / 2`` of the game, which alone determines the Shapley
       values. The odd part is fitted, with the Shapley-kernel weights, by a linear term
       (unpenalized) plus a Gaussian-process / kernel-ridge term of odd order-3
       interactions (kernel ``e_3(x * x')`` on ``x in {-1, +1}^Pa``), with the full
       coalition imposed exactly; the estimate is the exact Shapley value of the fit.
       Without the order-3 term this is paired KernelSHAP with exact strata; with it,
       games with at most third-order odd structure are fitted far better (a game with
       dividends up to order 3 lies in the class: its error is the prior's shrinkage
       alone, falling as ``1 / ratio``; the default ``ratio=100`` keeps that shrinkage
       because a larger one raised the error of games outside the class). With at least
       ``8 Pa`` pairs (``ard_min``) the triples' prior variances are re-estimated twice
       from the fit (automatic relevance determination: a sparse order-3 surrogate), and
       five times (``ard_long``) from ``16 Pa`` pairs (``ard_long_min``) where they are
       at most half the fit's ``Pa + C(Pa, 3)`` unknowns (``ard_long_share``): sparse
       recovery, where more rounds pay (:func:`_sparse_recovery`). Measured: 0.83x / 0.79x
       the error of two rounds on dividend32 at ``n_evals`` 32 / 64, gradient boosting
       on Taiwan credit (23 players) 0.96x at 32, a dense 40-feature MLP 1.01-1.02x, at
       1.4-2.2x the fit's time; five rounds wherever ``16 Pa`` pairs were fitted cost
       ``KnockoffSHAP``'s default 18 % of its rows/s for 0.7 % of its error
       (``doc/benchmarks.md``, fifteenth session). In that regime a triple's relevance
       is also pooled with its pairs' (``ard_pool="pairs"``, :func:`_pair_pooled`: the
       geometric mean of its own squared coefficient and its three pairs' totals):
       dividend32 0.93x / 0.87x the error at 32 / 64, the dense MLP 0.95-0.97x, Taiwan
       0.99-1.00x, at the same time (seventeenth session); outside it (German credit
       1.01-1.05x, the held-out SVM 0.86-0.99x) it is not used.
       **Below ``8 Pa`` pairs, the triples' prior follows the players' activities**
       (heredity): the size-1 pairs, always enumerated first, give each player's ``A_i = v(all) -
       v(all - i) - v({i}) + v(empty)``, the sum of its dividends of order two and more;
       a triple's odd coefficient comes only from dividends that hold all three of its
       players, so its prior variance is taken in proportion to ``prod_T (|A_i| + 0.05
       max |A|)`` (``prior="activity"``, ``activity_floor``; kernel ``e_3(w * x * x') /
       e_3(w)``). Measured on the benchmark games (4 seeds): 0.55-0.75x the flat prior's
       error at ``n_evals`` 2-4 on the Adult and German games, 0.85-0.94x at 8 (1.04x on
       Adult with 16 background rows), 0.92x / 0.94x on dividend32 at 4 / 8; with ARD it
       was worse on games whose interactions ignore the activities (dividend32 1.3-3x at
       16-64), so ARD starts from the flat prior. Per-row evidence: told each row's true
       order-3 spectrum, the same designs reach 0.38x / 0.44x the flat fit's error on
       the one-reference Adult games at ``n_evals=2``; the activities get 0.62x / 0.60x.
       **For at most 20 active players (``pair_prior_max = 1140`` triples) the pairs'
       interactions refine the activities** (``prior="pairs"``, :func:`_pair_prior`):
       each pair's even part ``(v(S) + v(~S)) / 2`` is kriged by order-2 terms (prior
       variances ``w_i w_j``) into the row's pairwise Walsh coefficients ``c_ij``, and a
       triple's prior variance is ``sqrt(prod_T w) (prod_{ij in T} |c_ij|)**(1/3)``, the
       geometric mean of the activities' prior and the pairs' (a dividend on ``D`` puts
       coefficients on every pair and every triple in ``D``). Measured (8 seeds): 0.81-1.0x
       the activity prior's error at ``n_evals`` 2-8 on the four Adult and German games
       (0.87x / 0.93x on the one-reference games at 2), at 1.2-1.4x the time of those
       rows' fits (1.2-1.7x with standard errors); a triple's prior from the pairs alone
       was 0.88x on Adult XGBoost but 1.18x on the MLP at 4. Beyond 20 players the
       kernel's ``C(Pa, 3)`` characters per point cost too much for the measured gain
       (dividend32: 0.95x). Each cross-fit fold takes
       the prior of the pairs outside it (with the prior of all pairs the one-reference
       games' intervals covered 0.919 / 0.926 at ``n_evals=4``; fold by fold 0.941 / 0.958).
       **Wide rows:** ARD weighs every one of the ``C(Pa, 3)`` triples each round
       (``O(n Pa^3)`` time): it runs for at most ``ard_max_players = 64`` active players,
       wider rows keep the activity prior; the order-3 fit solves ``min(n + 1, Pa +
       C(Pa, 3))`` unknowns (kriging or primal form, cubic time): beyond
       ``max_unknowns = 2048`` the row is fitted by the linear term alone.
       With the flat prior (``prior="flat"``) and fewer than ``2 Pa`` pairs
       (``linear_below``) the fit is the linear term alone (paired KernelSHAP): the flat
       order-3 term has too little to learn from there (measured: 4-5 % lower error on
       the background games at ``n_evals=2``). ARD, measured (benchmark games, 4
       seeds): from ``4 Pa`` pairs on it cost 1.4-2.6x the time of the plain fit and
       changed its error by -9 % to +4 % between 4 and 8 ``Pa`` pairs; from ``8 Pa`` on
       it lowers the error by 9-42 %.
       The sampled pairs are drawn in units of ``folds = 4`` per stratum (for the
       cross-fit below); the ``< 4`` pairs left over are drawn after them from the
       strata that have units (in proportion to their mass) and enter every fit. They
       used to be left out: using them lowered the error by 3-32 % at ``n_evals`` 2-4
       on the benchmark games (Adult one-reference MLP at 2: 1.87e-3 -> 1.26e-3).

    Efficiency ``phi.sum(axis=1) == v(all) - v(empty)`` holds exactly in exact arithmetic
    (the full coalition is a noise-free observation of the fit); the round-off gap
    (~1e-15) is then spread equally over the active players.

    Parameters
    ----------
    game : Game
        The game to explain.
    n_evals : int >= 2
        Coalition evaluations per player and row: at most ``n_evals * P`` coalitions per
        row besides the empty and the full one (``game.n_evaluations`` counts them).
    generators : list of numpy.random.Generator or None
        One per row; row ``r``'s coalitions depend only on ``generators[r]`` and row ``r``.
        ``None`` with ``design_seed``.
    return_units : bool, default=False
        Also return units whose spread (:func:`unit_std`) is a standard error. It comes from
        a 4-fold cross-fitted, regression-adjusted estimate ``phi_x`` (see :func:`_xfit`:
        surrogate fitted without fold ``h`` + unbiased stratified estimate of its
        residual's Shapley values from fold ``h``; standard error ``se_x`` from the
        residuals). The returned ``phi`` stays the plain fit on all pairs (lower error,
        measured). Its standard error is ``max(se_x, |phi_x - phi|)`` (``se_mode="max"``)
        for a single game: with the pooled rule below the one-reference Adult games
        covered 0.917-0.929 at ``n_evals`` 2-4, with the max rule 0.929-0.944.
        ``se_mode="pooled"``: ``se**2 = k2 * se_x**2 + max((phi_x - phi)**2 - se_x**2,
        0)``, where ``k2`` (clipped to [0.7, 1]) is the mean squared error of the fold
        surrogates' own Shapley values (``E R_h**2 - Var R_h``, ``R_h`` the fold's residual
        correction, pooled over players) over ``sum(se_x**2)``: an estimate of the mean
        squared error rather than a bound, used for each component of a mean game
        (``se_mode="auto"``, the default), whose standard error sums ``K`` of them, so that
        their noise averages out (measured: the max rule covered 0.98-1.00 there, the
        pooled one 0.96-0.99). ``phi`` does not
        depend on ``return_units``; the units cost four more fits. Rows computed exactly
        get copies of ``phi`` (standard error 0); a row whose pairs all lie in enumerated
        strata (e.g. ``n_evals = 2``) is deterministic but not exact and gets NaN units;
        a row with a sampled stratum of fewer than 4 pairs falls back to jackknife units
        over groups of the sampled pairs (sampling variance only). **Student-t
        intervals:** a standard error estimated from few sampled pairs is itself noisy
        (4 pairs, one per fold, leave it 3 degrees of freedom), so the returned one is
        widened by ``t(0.975, df) / z(0.975)`` (:func:`t_widened`), ``df`` the
        Welch-Satterthwaite degrees of freedom of the sampled strata (the jackknife's
        ``G - 1``; for a mean game, Welch-Satterthwaite's combination over the
        components): ``phi +- 1.96 se`` is then a 95 % Student-t interval, and the
        widening vanishes as the pairs grow. **Measured** (8 seeds,
        ``doc/benchmarks.md``): 95 % coverage 0.93-0.97 on the one-reference Adult rows
        at ``n_evals`` 2-8, 0.97-0.99 on the background games at ``n_evals`` 2-16
        (conservative), none below 0.929.
    paths : list or None, default=None
        When a list, receives each row's path (one str per row): ``"exact"`` (every
        coalition of the active players evaluated), ``"dummy"`` (at most one active
        player), ``"border"`` (whole coalition sizes from the border only, nothing
        sampled, e.g. the size-1 stratum at ``n_evals=2``: deterministic, not exact),
        ``"sampled"``, ``"linear"`` (sampled, fitted by the linear term alone: a row too
        wide for the order-3 term, ``max_unknowns``); for a mean game, the components'
        paths summed up (:func:`row_path`).
    dof : list or None, default=None
        When a list and ``return_units=True``, receives one array (n_rows, n_players,
        n_outputs): the degrees of freedom of the returned standard errors (``inf``
        where the interval is normal, e.g. exact values), for callers that combine them
        (the standard error the units give is already widened by them).
        :func:`~sklearn_xai.shapley.estimate_shapley` returns the standard errors and
        their degrees of freedom themselves, without units.
    design_seed : int >= 0 or None, default=None
        **Shared designs** (:func:`~sklearn_xai.shapley.frontier_shared_shapley`): every
        row (or component) with as many active players and pairs takes one design, drawn
        from ``design_seed``, that number of players, the budget and (for a mean game's
        components) its stream alone (the number of its row's earlier components with
        as many players and pairs: independent designs within a row, shared across
        rows); ``generators`` is then not used. The
        fit has a flat order-3 prior (no activity or pairs' prior, no ARD), so the
        estimate and the linear parts of its cross-fitted standard error are fixed
        matrices of the row's values, computed once per design and cached (64 MiB);
        a row's values come from one matrix-vector product per output and its own sums
        (bitwise the same in any call); a design whose basis fits would hold more than
        64 MiB (``n_pairs**2 * Pa`` floats: about 800 pairs of 13 players) is fitted row
        by row instead (the same fit).
        Far cheaper per row; 1.0-2.3x the error of the per-row fit on the benchmark
        games, 2.7x where its ARD pays (``doc/benchmarks.md``).
    **config
        Tuning knobs for benchmarks: ``alloc`` ("greedy": whole strata from the border
        while the budget covers them, then water-filling; "kernel": water-filling only;
        "uniform": water-filling with equal mass per size), ``orders`` (odd orders of the
        kernel, ``()`` for the linear fit alone), ``ratio`` (prior variance of the kernel
        term over the misfit variance), ``ht`` (Horvitz-Thompson weights of the sampled
        pairs), ``mode`` ("hybrid": as above; "xfit": return the cross-fitted ``phi_x``
        and ``se_x`` themselves (unbiased, higher error); "fit": plain fit with jackknife
        units), ``folds``, ``ard`` (rounds), ``lam``, ``ard_min``, ``ard_long`` (rounds
        from ``ard_long_min * Pa`` pairs), ``ard_long_min``, ``ard_long_share``,
        ``ard_pool`` ("pairs": the triples' relevance pooled with their pairs' in the
        sparse-recovery regime; "none"),
        ``linear_below``,
        ``prior`` ("pairs", "activity" or "flat"), ``activity_floor``, ``pair_floor``
        (added to the pairs' ``|c_ij| / max``), ``pair_prior_max``, ``by_component``, ``pool``
        (components share their row's budget), ``pool_by`` ("interactions": beyond their
        border pairs in proportion to ``Pa**2 * sqrt(||A||)``; "size": to ``Pa**2``;
        "interactions" needs ``alloc="greedy"`` and is "size" otherwise),
        ``ard_max_players``, ``max_unknowns`` (the wide-row caps above). The defaults
        are the measured best (``benchmarks/bench_shapley.py``).

    Returns
    -------
    phi : ndarray of shape (n_rows, n_players, n_outputs)
        The estimated Shapley values of each row's game; they add up to
        ``v(all) - v(empty)``.
    base : ndarray of shape (n_rows, n_outputs)
        ``v(empty)``.
    units : ndarray of shape (n_rows, G, n_players, n_outputs) or None
        Only with ``return_units=True``; ``None`` when every row is exact.
    """
    phi, base, se, df, row_paths = _frontier_estimate(game, n_evals, generators, return_units,
                                                     design_seed, **config)
    if paths is not None:
        paths.extend(row_paths)
    if not return_units:
        return phi, base
    if dof is not None:
        dof.append(df)
    return phi, base, None if se is None else _units_from_se(phi, se)


def _frontier_estimate(game, n_evals, generators, with_se, design_seed=None, **config):
    """The frontier's estimate of every row of ``game`` as the engine takes it
    (:func:`~sklearn_xai.shapley.estimate_shapley`): ``(phi, base, se, df, paths)``, the
    standard errors Student-t widened by their degrees of freedom ``df``, without units.
    ``se`` is None without ``with_se`` or when every value is exact (0), ``df`` None
    without ``with_se`` (``inf`` where normal or exact); ``paths`` a list of one str per
    row. Arguments as :func:`frontier_shapley`'s (``with_se`` its ``return_units``)."""
    cfg = _config(config)
    n_evals = _check_n_evals(n_evals)
    if design_seed is None:
        _check_generators(generators, game.n_rows)
    else:
        design_seed = _check_design_seed(design_seed, cfg)
    split = game.imputation_components() if cfg["by_component"] else None
    if split is not None:
        phi_k, base_k, se_k, df_k, path_k = _components(
            game, n_evals, generators, split, with_se, cfg, design_seed)
        paths = [row_path(p) for p in path_k]
        phi, base = phi_k.mean(axis=1), base_k.mean(axis=1)
        if not with_se:
            return phi, base, None, None, paths
        # independent designs: the variance of the mean is sum_k se_k^2 / K^2, its degrees
        # of freedom Welch-Satterthwaite's over the components
        se, df = mean_se(se_k, df_k, axis=1)
    else:
        paths = []
        out = _frontier_rows(game, n_evals, generators, cfg, with_se, paths=paths,
                             design_seed=design_seed)
        phi, base = out[0], out[1]
        if not with_se:
            return phi, base, None, None, paths
        if out[2] is None:
            return phi, base, None, np.full(phi.shape, np.inf), paths
        se, df = out[2], out[3]
    se = t_widened(se, df)
    # every value exact (standard error 0, none NaN): no error to report
    exact = not np.any(np.isnan(se)) and not np.any(se > 0)
    return phi, base, None if exact else se, df, paths


def row_path(component_paths: Sequence[str]) -> str:
    """One row's path from its components' (:func:`frontier_components`): the shared
    path when all agree, else e.g. ``"sampled (3 of 16 components; 13 exact)"``."""
    names, counts = np.unique(np.asarray(component_paths, dtype=str), return_counts=True)
    if names.size == 1:
        return str(names[0])
    K = int(counts.sum())
    order = ("sampled", "linear", "border", "exact", "dummy")
    have = dict(zip(names.tolist(), counts.tolist()))
    lead = next(p for p in order if p in have)
    rest = "; ".join(f"{have[p]} {p}" for p in order if p in have and p != lead)
    return f"{lead} ({have[lead]} of {K} components; {rest})"


def frontier_components(game: Game, n_evals: int,
                        generators: Sequence[np.random.Generator] | None,
                        *, components: tuple[Game, int] | None = None,
                        with_se: bool = True, design_seed: int | None = None,
                        **config: Any) -> tuple[np.ndarray, ...]:
    """The frontier estimate of each imputation component of a mean game.

    A game that is a mean of ``K`` component games (``game.imputation_components()``, e.g.
    an :class:`ImputationGame` with ``K`` background rows or knockoffs) is estimated
    component by component, each with its own design drawn from the row's generator and
    its own dummy players (a player whose columns equal the component's imputation row),
    and a component whose reduced game fits the budget is enumerated exactly. A coalition
    of a component costs one model row, ``1 / K`` of a coalition of the mean, so the
    components of a row share ``K * n_evals * n_players`` coalitions (the same model rows
    as ``n_evals`` on the mean game): those cheapest to enumerate are made exact while
    they cost at most the others' equal share, and the others get their border pairs and
    the rest in proportion to ``Pa**2 * sqrt(||A||)``: their squared number of active
    players times the square root of the norm of their players' activities
    (``A_i = v(all) - v(all - i) - v({i}) + v(empty)``, the higher-order dividends of
    ``i``, read off the border pairs, which are evaluated first for that and not again).
    From ``n_evals = 3``, a sampled component whose share would leave it fewer than 4
    pairs to sample beyond its enumerated strata (so no standard error) gets the pairs it
    lacks from the component with the largest share that keeps 4 of its own.

    Parameters
    ----------
    game : Game
        A game with ``imputation_components()``.
    n_evals : int >= 2
        Coalition evaluations per player and row, in coalitions of the mean game.
    generators : list of numpy.random.Generator or None
        One per row; row ``r``'s components draw from ``K`` generators seeded from it.
        ``None`` with ``design_seed``.
    components : (Game, int) or None
        ``game.imputation_components()``, when the caller has it.
    with_se : bool, default=True
        Compute the standard errors (the cross-fit costs four more surrogate fits per
        sampled component); ``se`` is ``None`` otherwise. The values do not depend on it.
    design_seed : int >= 0 or None, default=None
        Shared designs (see :func:`frontier_shapley`): component ``k`` of every row
        draws from the stream of how many of its row's earlier components have as many
        active players and pairs; ``generators`` is then not used.
    **config
        As :func:`frontier_shapley`.

    Returns
    -------
    phi : ndarray of shape (n_rows, K, n_players, n_outputs)
        Each component's Shapley values (efficient for its component).
    base : ndarray of shape (n_rows, K, n_outputs)
        Each component's ``v(empty)``.
    se : ndarray of shape (n_rows, K, n_players, n_outputs) or None
        Their standard errors: 0 where a component is exact, NaN where it has no
        estimate; ``None`` with ``with_se=False``.
    path : ndarray of str, shape (n_rows, K)
        How each component was computed: ``"dummy"`` (at most one active player),
        ``"exact"``, ``"border"`` (whole coalition sizes from the border only, nothing
        sampled: deterministic, not exact),
        ``"sampled"`` or ``"linear"`` (sampled, the linear fit alone: too wide for the
        order-3 term).
    """
    cfg = _config(config)
    n_evals = _check_n_evals(n_evals)
    if design_seed is None:
        _check_generators(generators, game.n_rows)
    else:
        design_seed = _check_design_seed(design_seed, cfg)
    if components is None:
        components = game.imputation_components()
    if components is None:
        raise ValueError("frontier_components needs a game with imputation components.")
    phi, base, se, _, path = _components(game, n_evals, generators, components, with_se, cfg,
                                         design_seed)
    return phi, base, se, path


def _components(game, n_evals, generators, components, with_se, cfg, design_seed=None):
    """:func:`frontier_components` (checked arguments, full ``cfg``), with the degrees
    of freedom of each standard error (``None`` without ``with_se``) before the path;
    with a ``design_seed``, the components share designs (:func:`_shared_design`)."""
    n = game.n_rows
    comp, K = components
    gens = None
    if design_seed is None:
        seeds = [g.integers(0, 2**63 - 1, size=K, dtype=np.int64) for g in generators]
        gens = [np.random.default_rng(int(s)) for row in seeds for s in row]
    evals0 = comp.n_evaluations
    paths = []
    if cfg["se_mode"] == "auto":
        # a sum of K components' errors: unbiased estimates of each (see frontier_shapley)
        cfg = dict(cfg, se_mode="pooled")
    out = _frontier_rows(comp, n_evals, gens, cfg, with_se, paths=paths,
                         pool=K if cfg["pool"] else None, design_seed=design_seed)
    phi, base = out[0], out[1]
    # K component coalitions cost as many model rows as one coalition of the mean
    game.n_evaluations += -(-(comp.n_evaluations - evals0) // K)
    P, O = phi.shape[1], phi.shape[2]
    se = df = None
    if with_se:
        se = (np.zeros_like(phi) if out[2] is None else out[2]).reshape(n, K, P, O)
        df = out[3].reshape(n, K, P, O)
    return (phi.reshape(n, K, P, O), base.reshape(n, K, O), se, df,
            np.array(paths, dtype=object).reshape(n, K))


def _units_from_se(phi, se):
    """Units (n, G, P, O) with mean ``phi`` whose :func:`unit_std` is ``se`` (not None:
    some value is not exact)."""
    z = _unit_pattern(MAX_GROUPS)
    return phi[:, None] + z[None, :, None, None] * se[:, None] * np.sqrt(MAX_GROUPS)


def _pooled_budgets(active, K, budget, activity_norms=None, unit=1, alloc="greedy"):
    """Coalitions of each component (rows ``r K .. r K + K - 1`` of ``active``) when the
    ``K`` components of a row share ``K * budget``: the components that are cheapest to
    enumerate are made exact while their cost is at most the others' equal share of what
    is left; the sampled ones get their border pairs (``2 Pa`` coalitions) and the rest in
    proportion to ``Pa**2 * sqrt(||A||)``, ``||A||`` the norm of the component's player
    activities (:func:`_row_activity`, from its border pairs), without exceeding the
    cost of its enumeration. ``activity_norms(comps)`` returns ``||A||`` of the listed
    component rows (one call for all rows); without it, or where every norm of a row is
    0, the rest goes in proportion to ``Pa**2``. With ``unit > 1`` (the cross-fit's folds)
    and ``budget > 2 P``, a sampled component whose share would leave it fewer than
    ``unit`` pairs to sample beyond its enumerated strata (deterministic, not exact: no
    standard error, which made the whole row's NaN) gets the pairs it lacks from the
    component with the largest budget (:func:`_nudge_to_units`)."""
    Pa = active.sum(axis=1).reshape(-1, K)
    cost = np.where(Pa <= 1, 0, 2.0 ** Pa - 2)
    out = np.empty(Pa.shape, dtype=np.int64)
    pending = []
    for r in range(Pa.shape[0]):
        left, todo = K * budget, list(np.argsort(cost[r], kind="stable"))
        while todo and cost[r, todo[0]] <= left / len(todo):
            k = todo.pop(0)
            out[r, k] = int(cost[r, k])
            left -= out[r, k]
        if todo:
            # the share left / len(todo) never falls below n_evals * P >= 2 P (a component
            # is made exact only when it costs at most the share), so every sampled
            # component gets all its border pairs, whose values the activities read
            todo = np.array(todo)
            out[r, todo] = np.minimum(2 * Pa[r, todo], left // todo.size)
            rest = left - out[r, todo].sum()
            if rest > 0:
                pending.append((r, todo, rest))
    if not pending:
        return out.ravel()
    comps = np.concatenate([r * K + todo for r, todo, _ in pending])
    norms = (np.zeros(comps.size) if activity_norms is None else activity_norms(comps))
    start = 0
    for r, todo, rest in pending:
        a = norms[start:start + todo.size]
        a = np.where(np.isfinite(a), a, 0.0)      # a non-finite game: no guide, Pa^2 alone
        start += todo.size
        # a component's error grows with its active players (Pa^2, measured against an
        # equal share: German bg16 -9/-9/-34/-22/+10 %, Adult bg16 +1/-18/0/-29 % at
        # n_evals 2-32) and with the size of its interactions (sqrt ||A||, measured
        # against Pa^2 alone: Adult bg16 -15/-19/-38/-31 %, German bg16 0/-2/-4/-10 % at
        # n_evals 2-16, 8 seeds)
        wts = Pa[r, todo].astype(float) ** 2 * (np.sqrt(a) if np.any(a > 0) else 1.0)
        q = _water_fill(rest * wts / wts.sum(), cost[r, todo] - out[r, todo])
        out[r, todo] += np.floor(q).astype(np.int64)
        if unit > 1 and budget > 2 * active.shape[1]:
            # from n_evals = 3 on (at 2 a row's budget is about its border pairs)
            _nudge_to_units(out[r], Pa[r], cost[r], todo, unit, alloc)
    return out.ravel()


def _units_left(Pa, budget, unit, alloc):
    """Pairs a component of ``Pa`` players and ``budget`` coalitions samples beyond its
    enumerated strata (:func:`_design_plan`)."""
    return _design_plan(int(Pa), int(budget) // 2, alloc, unit)[2]


def _nudge_to_units(out, Pa, cost, todo, unit, alloc):
    """Give each sampled component whose budget leaves fewer than ``unit`` pairs to
    sample (its values deterministic, not exact: no error estimate) the pairs it lacks,
    from the component with the largest budget that keeps ``unit`` pairs of its own."""
    for k in todo:
        if out[k] >= cost[k]:
            continue
        left = _units_left(Pa[k], out[k], unit, alloc)
        if left >= unit:
            continue
        need = 2 * (unit - left) + (out[k] % 2)
        if out[k] + need >= cost[k]:
            continue
        for d in sorted(todo, key=lambda j: -out[j]):
            if d == k or out[d] - need < 2 * Pa[d]:
                continue
            if out[d] >= cost[d] or _units_left(Pa[d], out[d] - need, unit, alloc) >= unit:
                out[d] -= need
                out[k] += need
                break


def _border_values(game, comps, active):
    """``{row: (2 Pa, n_outputs) values}`` of the size-1 pairs of the rows ``comps`` of
    ``game`` (``v({i})``, ``v(all - i)`` of each active player ``i`` in turn), with the
    masks :func:`_plan_rows` gives these pairs, the rows with as many active players in
    one block (:meth:`~Game._value_blocks`)."""
    comps = np.asarray(comps, dtype=np.int64)
    n_active = active[comps].sum(axis=1)
    blocks = []
    for Pa in np.unique(n_active):
        rows = comps[n_active == Pa]
        blocks.append((rows, _blocks(_size1_masks(int(Pa)), active[rows], False)))
    known = {}
    for (rows, _), vals in zip(blocks, game._value_blocks(blocks)):
        known.update(zip(rows.tolist(), vals))
    return known


@lru_cache(maxsize=64)
def _size1_masks(Pa):
    """The size-1 pairs' coalitions over ``Pa`` players, ``{i}`` then ``all - i`` for
    each ``i`` (2 Pa, Pa) (read-only, cached)."""
    return _read_only(_pair_masks(np.eye(Pa, dtype=bool), np.arange(Pa), Pa))[0]


def _values(game, plans, known):
    """Each plan's values (R, C, n_outputs) (:meth:`~Game._value_blocks`); the coalitions
    of the rows in ``known`` that hold one active player or all but one
    (:func:`_border_values`) taken from there instead of evaluated again (one
    :meth:`~Game.value_each` call)."""
    if known:
        return _values_each(game, plans, known)
    return game._value_blocks([(p.rows, p.masks) for p in plans])


def _values_each(game, plans, known):
    """:func:`_values` by one :meth:`~Game.value_each` call over the rows (the known
    border coalitions left out and filled in)."""
    masks = [None] * game.n_rows
    fills = []
    for p in plans:
        has = [int(r) in known for r in p.rows]
        C = p.masks.shape[1]
        if not any(has) or not C:
            for i, r in enumerate(p.rows):
                masks[r] = p.masks[i]
            fills.append(None)
            continue
        # a plan's rows share their coalitions over their own active players (_blocks),
        # so the positions of their known ones too
        if p.kind == "shared":
            at, asked, given = p.extra.border
        else:
            i0 = has.index(True)
            at, asked, given = _border_positions(p.masks[i0][:, p.players[i0]])
        for i, r in enumerate(p.rows):
            masks[r] = p.masks[i][asked] if has[i] else p.masks[i]
        fills.append((has, at, asked, given))
    vals = game.value_each(masks)
    out = []
    for p, fill in zip(plans, fills):
        if fill is None:
            out.append(np.stack([vals[r] for r in p.rows]) if p.rows.size > 1 else
                       vals[p.rows[0]][None])
            continue
        has, at, asked, given = fill
        v = np.empty((p.rows.size, at.size, vals[p.rows[0]].shape[-1]))
        for i, r in enumerate(p.rows):
            if has[i]:
                v[i, asked] = vals[r]
                v[i, given] = known[int(r)][at[given]]
            else:
                v[i] = vals[r]
        out.append(v)
    return out


def _border_positions(local):
    """Where the coalitions ``local`` (C, Pa) over a row's active players stand among its
    size-1 pairs' values (:func:`_border_values`: ``2 i`` for ``{i}``, ``2 i + 1`` for
    ``all - i``; -1 for the others), and the positions of the others and of those."""
    size = local.sum(axis=1)
    at = np.where(size == 1, 2 * local.argmax(axis=1),
                  np.where(size == local.shape[1] - 1, 2 * local.argmin(axis=1) + 1, -1))
    return at, np.flatnonzero(at < 0), np.flatnonzero(at >= 0)


def _frontier_rows(game, n_evals, generators, cfg, return_units, paths=None, pool=None,
                   design_seed=None):
    """The frontier estimate of each row's game (no component split): ``(phi, base)``,
    with ``return_units`` also the standard errors and their degrees of freedom
    (:func:`_solve_rows`); ``paths``, when a list, receives each row's path (see
    :func:`frontier_components`); ``pool=K``: the rows are the components of ``n_rows /
    K`` rows, whose budgets are pooled (:func:`_pooled_budgets`; the border pairs of the
    components that get more are evaluated first, for their activities)."""
    xfit = cfg["mode"] in ("xfit", "hybrid")
    P, n = game.n_players, game.n_rows
    active = _active_players(game)
    # the ends v(empty), v(all) of each row are evaluated with its planned coalitions (one
    # model call less), except where the pooled budgets need them first (the components'
    # activities)
    early = pool is not None or n == 0
    if early:
        v0, v1 = _ends(game)
    known, acts = {}, {}

    def activity_norms(comps):
        # ||A|| of each component: the norm of its players' activities (_activities)
        known.update(_border_values(game, comps, active))
        kv = np.concatenate([known[int(r)] for r in comps])
        sizes = active[comps].sum(axis=1)
        seg = np.repeat(np.arange(len(comps)), sizes)
        a = _activities(kv[0::2], kv[1::2], v0[comps][seg], v1[comps][seg])
        # each component's |A_i| in the order of its players, for its fit's prior
        ends = np.cumsum(sizes).tolist()
        acts.update((int(r), a[i:j]) for r, i, j in zip(comps, [0] + ends[:-1], ends))
        # in each component's power-of-two scale (exact): a**2 under- or overflows far from 1
        top = np.zeros(len(comps))
        np.maximum.at(top, seg, a)
        c = pow2_scale(top[:, None], axis=1)[:, 0]
        return np.sqrt(np.bincount(seg, (a / c[seg]) ** 2, minlength=len(comps))) * c

    # the border pairs evaluated first must be in the designs: "greedy" enumerates them
    # first; the other allocations may not
    by_activity = cfg["pool_by"] == "interactions" and cfg["alloc"] == "greedy"
    budget = (n_evals * P if not pool else
              _pooled_budgets(active, pool, n_evals * P, activity_norms if by_activity else None,
                              unit=cfg["folds"] if xfit else 1, alloc=cfg["alloc"]))
    plans = _plan_rows(active, budget, generators, cfg, xfit, design_seed, return_units,
                       pool or 1, ends=not early)
    vals = _values(game, plans, known)
    if not early:
        O = vals[0].shape[-1]
        v0, v1 = np.empty((n, O)), np.empty((n, O))
        for k, p in enumerate(plans):
            v0[p.rows], v1[p.rows] = vals[k][:, -2], vals[k][:, -1]
            vals[k] = vals[k][:, :-2]
    phi = np.zeros((n, P, v0.shape[-1]))
    if paths is not None:
        names = np.empty(n, dtype=object)
        for p in plans:
            names[p.rows] = _path_name(p, cfg)
        paths.extend(names.tolist())
    se, df = _solve_rows(plans, vals, v0, v1, cfg, xfit, return_units, phi, acts)
    base = v0.copy()
    if not return_units:
        return phi, base
    return phi, base, se, df


def _path_name(plan, cfg):
    """The path of the rows of ``plan`` (see :func:`frontier_components`)."""
    if plan.kind == "shared":
        return plan.extra.path
    if plan.kind == "fit":
        return _design_path(plan.extra[0], plan.extra[2], cfg)
    return {"done": "dummy", "exact": "exact"}[plan.kind]


def _design_path(S, strat, cfg):
    """The path of a row sampled with the pairs ``S`` of strata ``strat``."""
    if _is_border(S) or not np.any(strat >= 0):
        # whole coalition sizes from the border only, nothing sampled
        return "border"
    return "linear" if _too_wide(S.shape[0], S.shape[1], cfg) else "sampled"


def _order3_unknowns(n_pairs, Pa):
    """The unknowns of the order-3 fit of ``n_pairs`` pairs over ``Pa`` players in its
    kriging form (one weight per pair and the full coalition) and in its primal form (the
    linear and triple coefficients); :func:`_fit_row` solves the smaller, in cubic time."""
    return n_pairs + 1, Pa + comb(Pa, 3)


def _too_wide(n_pairs, Pa, cfg):
    """Whether the order-3 fit of ``n_pairs`` pairs over ``Pa`` players would solve more than
    ``max_unknowns`` unknowns (:func:`_order3_unknowns`, the smaller form): the row is
    then fitted by the linear term alone (path ``"linear"``)."""
    return min(_order3_unknowns(n_pairs, Pa)) > cfg["max_unknowns"]


def _ard_rounds(cfg, sparse):
    """ARD's rounds for a fit in ARD's regime: ``ard``, or ``ard_long`` where the fit is a
    sparse recovery (``sparse``, :func:`_sparse_recovery`). ``ard=0`` (the shared
    designs' flat fit) is no ARD at all."""
    return cfg["ard_long"] if cfg["ard"] and sparse else cfg["ard"]


def _sparse_recovery(n_pairs, Pa, cfg):
    """Whether a fit of ``n_pairs`` pairs over ``Pa`` players is in ARD's sparse-recovery
    regime: at least ``ard_long_min * Pa`` pairs, and its kriging form's unknowns at most
    ``ard_long_share`` times the primal form's (:func:`_order3_unknowns`). There more ARD
    rounds (a sparser fit) pay, and the triples' relevance is pooled with their pairs'
    (:func:`_pair_pooled`); fewer pairs lock the rounds onto their noise, and closer to
    determined they cost more than they gain."""
    if n_pairs < cfg["ard_long_min"] * Pa:
        return False
    kriging, primal = _order3_unknowns(n_pairs, Pa)
    return kriging <= cfg["ard_long_share"] * primal


def _is_border(S):
    """The pairs ``S`` (n, Pa) are exactly the size-1 stratum (``n_evals = 2``)."""
    return S.shape[0] == S.shape[1] and bool(np.all(S.sum(axis=1) == 1))


def _active_players(game):
    """The active players of each row (n_rows, P): those of ``game.active_players()``
    when the game has it, else every player."""
    active = (game.active_players() if hasattr(game, "active_players") else None)
    return (np.ones((game.n_rows, game.n_players), bool) if active is None
            else np.asarray(active, dtype=bool))


def _ends(game):
    """``v(empty)`` and ``v(all)`` of each row, each (n_rows, n_outputs), in one call."""
    P = game.n_players
    ends = game.value(np.array([np.zeros(P, bool), np.ones(P, bool)]))
    return ends[:, 0], ends[:, 1]


def _local_columns(active):
    """Each active player's column among its row's active players, -1 for the others
    (n_rows, P): the gather of :func:`_blocks`, computed once for all rows of a call."""
    return np.where(active, np.cumsum(active, axis=1) - 1, -1)


def _blocks(local, active, ends, columns=None):
    """Each row's coalitions (R, C, P) from the coalitions ``local`` (C, Pa) over its
    active players (``active`` (R, P), ``Pa`` per row; the other players in none), and
    with ``ends`` the empty and the full coalition after them. ``columns``: the rows'
    :func:`_local_columns`, when the caller has them."""
    C, Pa = local.shape
    if active.shape[0] == 1:                 # one row: its columns set directly (cheaper)
        out = np.zeros((1, C + 2 * ends, active.shape[1]), bool)
        out[0, :C, np.flatnonzero(active[0])] = local.T
        if ends:
            out[0, C + 1] = True
        return out
    aug = np.zeros((C + 2 * ends, Pa + 1), bool)   # the last column: an inactive player
    aug[:C, :Pa] = local
    if ends:
        aug[C + 1] = True
    column = _local_columns(active) if columns is None else columns               # (R, P)
    return aug.T[column].transpose(0, 2, 1)


def _design_streams(rows, keys, K):
    """The stream of each sampled component ``rows`` (m,) of a mean game of ``K``
    components per row: how many earlier components of its row share its design key
    ``keys`` (m, 2) (active players, pairs); 0 for every row when ``K == 1``."""
    if K == 1 or rows.size == 0:
        return np.zeros(rows.size, dtype=np.int64)
    by = np.column_stack([rows // K, keys])
    order = np.lexsort((rows,) + tuple(by.T[::-1]))
    s = by[order]
    new = np.r_[True, np.any(s[1:] != s[:-1], axis=1)]
    at = np.arange(rows.size)
    stream = np.empty(rows.size, dtype=np.int64)
    stream[order] = at - np.maximum.accumulate(np.where(new, at, 0))
    return stream


class _Plan:
    """Rows planned together (:func:`_plan_rows`): ``kind``, the rows (R,), their
    coalitions ``masks`` (R, C, P), active players ``players`` (R, Pa) and ``extra``
    (exact: the coefficients ``(coef, c0, c1)`` of :func:`_exact_coefs`; shared: the
    :class:`_SharedDesign`; fit: the one row's design, :func:`_design`)."""

    __slots__ = ("kind", "rows", "masks", "players", "extra")

    def __init__(self, kind, rows, masks, players, extra=None):
        self.kind, self.rows, self.masks, self.players, self.extra = (kind, rows, masks,
                                                                     players, extra)


def _plan_rows(active, budget, generators, cfg, xfit, design_seed=None, with_se=False,
               design_streams=1, ends=False):
    """The rows' plans (:class:`_Plan`), each of one kind: ``"done"`` (at most one active
    player), ``"exact"`` (every coalition of the active players fits in the row's
    budget; the rows with as many active players together), ``"fit"`` (one row's drawn
    complementary pairs) or, with a ``design_seed``, ``"shared"`` (the rows with as many
    active players and pairs, and their design, :func:`_shared_design`; the components
    of a mean game, rows ``r K .. r K + K - 1`` with ``design_streams = K``: a component
    whose players and pairs equal those of ``s`` earlier components of its row draws
    from stream ``s``, so that a row's components have independent designs while the
    first such component of every row shares one). ``budget``: coalitions per row, one
    number or one per row. ``ends``: every row's masks end with the empty and the full
    coalition."""
    n, P = active.shape
    budgets = (np.full(n, budget, dtype=np.int64) if np.ndim(budget) == 0
               else np.asarray(budget, dtype=np.int64).reshape(n))
    n_active = active.sum(axis=1)
    columns = _local_columns(active)
    plans = []
    # 2**Pa - 2 <= budget, without overflow on wide rows
    exact = (n_active >= 2) & (n_active < 62) & (
        (np.int64(1) << np.minimum(n_active, 61)) - 2 <= budgets)
    none = np.zeros((2 * ends, P), bool)
    if ends:
        none[1] = True

    def players_of(rows, Pa):
        if rows.size == 1:
            return np.flatnonzero(active[rows[0]])[None]
        return np.nonzero(active[rows])[1].reshape(rows.size, Pa)

    for Pa in (0, 1):
        rows = np.flatnonzero(n_active == Pa)
        if rows.size:
            plans.append(_Plan("done", rows, np.broadcast_to(none, (rows.size,) + none.shape),
                               players_of(rows, Pa)))
    for Pa in np.unique(n_active[exact]):
        rows = np.flatnonzero(exact & (n_active == Pa))
        sub, coef, c0, c1 = _exact_coefs(int(Pa))
        plans.append(_Plan("exact", rows, _blocks(sub, active[rows], ends, columns[rows]),
                           players_of(rows, int(Pa)), (coef, c0, c1)))
    sampled = np.flatnonzero((n_active >= 2) & ~exact)
    if design_seed is None:
        for r in sampled:
            players = np.flatnonzero(active[r])
            design = _design(players.size, int(budgets[r]) // 2, generators[r], cfg["alloc"],
                             cfg["ht"], unit=cfg["folds"] if xfit else 1)
            masks = _pair_masks(design[0], players, P)
            plans.append(_Plan("fit", np.array([r]),
                               (np.concatenate([masks, none]) if ends else masks)[None],
                               players[None], design))
        return plans
    if not sampled.size:
        return plans
    keys = np.column_stack([n_active[sampled], budgets[sampled] // 2])
    keys = np.column_stack([keys, _design_streams(sampled, keys, design_streams)])
    knobs = _knobs(cfg)
    code = np.ravel_multi_index(keys.T, keys.max(axis=0) + 1)
    # the rows of each key in row order, the keys in increasing order (np.unique's)
    order = np.argsort(code, kind="stable")
    sorted_code = code[order]
    starts = np.flatnonzero(sorted_code[1:] != sorted_code[:-1]) + 1
    bounds = [0] + starts.tolist() + [order.size]
    for at in (order[i:j] for i, j in zip(bounds[:-1], bounds[1:])):
        rows = sampled[at]
        Pa, n_pairs, stream = keys[at[0]].tolist()
        sd = _shared_design(Pa, n_pairs, design_seed, cfg, with_se, stream, knobs)
        plans.append(_Plan("shared", rows,
                           _blocks(sd.local, active[rows], ends, columns[rows]),
                           players_of(rows, Pa), sd))
    return plans


def _solve_rows(plans, vals, v0, v1, cfg, xfit, return_units, phi, acts=None):
    """Write the values of each plan's rows into ``phi`` from the plans' coalition values
    ``vals`` (one (R, C, O) array per plan). With ``return_units``, also ``(se, df)`` of
    shape (n_rows, n_players, n_outputs): the standard errors (0 where exact, NaN where a
    row has no error estimate; ``se`` None when no row is sampled) and their degrees of
    freedom (inf where exact); ``(None, None)`` without. ``acts``: the players'
    activities of the rows that have them already (:func:`_row_activity`)."""
    se = np.zeros(phi.shape) if return_units else None
    df = np.full(phi.shape, np.inf) if return_units else None
    sampled = False
    scales = _row_scales(plans, vals, v0, v1)
    for p, v in zip(plans, vals):
        rows, players = p.rows, p.players
        if p.kind == "done":
            if players.shape[1]:
                phi[rows, players[:, 0]] = v1[rows] - v0[rows]
            continue
        at = (rows[:, None], players)
        if p.kind == "exact":
            coef, c0, c1 = p.extra
            # one matrix product per row (stacked): a row's round-off is its own
            phi[at] = (np.matmul(coef.T, v) + c0[:, None] * v0[rows][:, None, :]
                       + c1[:, None] * v1[rows][:, None, :])
            continue
        if p.kind == "shared":
            est, s, d = _shared_solve(p.extra, v, v0[rows], v1[rows], cfg, return_units,
                                      None if scales is None else scales[rows])
        else:
            r = int(rows[0])
            _, est, s, d = _solve_scaled((players[0], *p.extra), v[0], v0[r], v1[r], cfg,
                                         xfit, return_units, (acts or {}).get(r),
                                         1.0 if scales is None else float(scales[r]))
            est, s, d = est[None], (None if s is None else s[None]), np.asarray(d)[None]
        phi[at] = est
        if return_units:
            se[at], df[at], sampled = s, d, True
    return (se if sampled else None), df


def _row_scales(plans, vals, v0, v1):
    """The power-of-two scale (:func:`_far_scale`) in which each sampled row is fitted,
    decided once for the call: ``None`` when it is 1 for every row (every row's ends reach
    ``1 / FAR_BOUND``, so its largest value does, and no value passes ``FAR_BOUND``), else
    one per row of the game (n_rows,)."""
    sampled = [(p, v) for p, v in zip(plans, vals) if p.kind in ("shared", "fit")]
    if not sampled or not v0.size:
        return None
    ends = np.maximum(np.abs(v0).max(axis=1), np.abs(v1).max(axis=1))
    top = max(float(np.abs(v).max(initial=0.0)) for _, v in sampled)
    if ends.min() >= 1.0 / FAR_BOUND and max(top, ends.max()) <= FAR_BOUND:
        return None
    scales = np.ones(v0.shape[0])
    for p, v in sampled:
        for i, r in enumerate(p.rows):
            scales[r] = _far_scale(v[i], v0[r], v1[r])
    return scales


def _solve_scaled(extra, vals, v0, v1, cfg, xfit, return_units, activity=None, c=1.0):
    """:func:`_solve_fit_row` in the row's power-of-two scale ``c`` (exact;
    :func:`_row_scales`): far from 1 its squares and cross-fit variances would overflow
    or underflow."""
    if c == 1.0:
        return _solve_fit_row(extra, vals, v0, v1, cfg, xfit, return_units, activity)
    players, est, s, d = _solve_fit_row(extra, vals / c, v0 / c, v1 / c, cfg, xfit,
                                        return_units, None if activity is None else activity / c)
    return players, est * c, (None if s is None else s * c), d


def _solve_fit_row(extra, vals, v0, v1, cfg, xfit, return_units, activity=None):
    """``(players, phi of the active players, standard errors or None, their degrees of
    freedom)`` of a sampled row from the values ``vals`` of its pairs (a coalition, then
    its complement); NaN standard errors where the row has no error estimate."""
    players, S, W, strat, incl, is_extra = extra
    yN = (v1 - v0) / 2.0
    if _is_border(S):
        # exactly the size-1 stratum (n_evals = 2): deterministic, not exact
        est = _project(_border_row(S, vals[0::2], vals[1::2], v0, v1, cfg["border_c"]),
                       2 * yN)
        return players, est, np.full(est.shape, np.nan) if return_units else None, np.inf
    y = (vals[0::2] - vals[1::2]) / 2.0
    Pa = players.size
    # ARD weighs every one of the C(Pa, 3) triples each round (O(n Pa^3) time, O(n Pa^2)
    # memory): up to ard_max_players active players only
    big = S.shape[0] >= cfg["ard_min"] * Pa and Pa <= cfg["ard_max_players"]
    # below ARD's budget, the order-3 prior follows the players' activities (measured on
    # the benchmark games: 0.55-0.8x the error at n_evals 2-8; with ARD it is worse on
    # games whose interactions ignore the activities, dividend32 1.3-3x, so ARD starts
    # from the flat prior)
    act = prior_of = None
    X = np.where(S, 1.0, -1.0)
    if cfg["prior"] in ("activity", "pairs") and not big:
        act = _row_activity(S, vals[0::2], vals[1::2], v0, v1, cfg["activity_floor"],
                            known=activity)
        if (act is not None and cfg["prior"] == "pairs" and tuple(cfg["orders"]) == (3,)
                and comb(Pa, 3) <= cfg["pair_prior_max"]):
            vS, vC, w = vals[0::2], vals[1::2], act
            products = _pair_products(X).T                  # (n, C2), sliced per fold

            def prior_of(idx=slice(None)):
                # from the pairs idx only: a cross-fit fold's surrogate must not see
                # the fold (the size-1 pairs, in every fit, give the activities)
                mag = _pair_magnitudes(X[idx], vS[idx], vC[idx], v0, v1, w, cfg["ratio"],
                                       products=products[idx])
                return w if mag is None else _pair_prior(mag, w, cfg["pair_floor"])

            act = prior_of()
    # fewer than linear_below * Pa pairs and a flat prior: the linear fit (paired
    # KernelSHAP) alone, the order-3 term has too little to learn from
    small = act is None and S.shape[0] < cfg["linear_below"] * Pa
    small = small or _too_wide(S.shape[0], Pa, cfg)
    sparse = big and _sparse_recovery(S.shape[0], Pa, cfg)
    rcfg = dict(cfg, ard=_ard_rounds(cfg, sparse) if big else 0,
                pool_triples=sparse and cfg["ard_pool"] == "pairs",
                orders=() if small else cfg["orders"],
                activity=act, prior_of=None if small else prior_of)
    hybrid = cfg["mode"] == "hybrid"
    if xfit and (return_units or not hybrid) and _n_halves_ok(strat[~is_extra], cfg["folds"]):
        est, se, df = _xfit_estimate(S, X, y, W, strat, incl, yN, cfg, rcfg, is_extra)
        return players, _project(est, 2 * yN), se if return_units else None, df
    est = _fit_row(X, y, W, yN, rcfg["orders"], cfg["ratio"], ard=rcfg["ard"], lam=cfg["lam"],
                   activity=act, memo=cfg.get("memo"), ard_pool=rcfg["pool_triples"])
    se, df = None, np.inf
    if return_units:
        # groups of the units' pairs (the extra pairs stay in every fit): with none, the
        # row has no error estimate (the extra pairs of a stratum alone say nothing of
        # the rest of it; no sampled pair: deterministic but not exact)
        u = _jackknife(X, y, W, np.where(is_extra, -2, strat), yN, rcfg, est)
        se = np.full(est.shape, np.nan) if u is None else unit_std(u, axis=0)
        df = np.inf if u is None else u.shape[0] - 1.0
    return players, _project(est, 2 * yN), se, df


def _xfit_estimate(S, X, y, W, strat, incl, yN, cfg, rcfg, is_extra):
    """``(estimate, standard error, degrees of freedom)`` of a row from the cross-fit,
    combined with the plain fit on all pairs unless ``mode="xfit"`` (see
    :func:`frontier_shapley`); the degrees of freedom are the cross-fit's
    (Welch-Satterthwaite over the sampled strata); ``is_extra``: see :func:`_design`."""
    # the fold surrogates without ARD: the estimate is the plain fit's (with ARD), the
    # folds only size its error; measured: coverage within +-2 % of the ARD folds' on the
    # benchmark games, at half the cost of a row with units
    gram = kshap = chars = design = None
    order3 = tuple(rcfg["orders"]) == (3,) and cfg["ratio"]
    if rcfg.get("prior_of") is not None and order3:
        # the pairs' prior differs per fold: the folds share the characters of [X; 1]
        chars = _chi3(np.vstack([X, np.ones((1, X.shape[1]))]), _triples(X.shape[1]))
    memo = cfg.get("memo")
    if _uses_kernel(rcfg["orders"], cfg["ratio"], X.shape[0], X.shape[1]):
        # the kernel of [X; 1] and its Shapley values: the folds' are slices of them
        gram, kshap = _memoized(memo, "gram",
                                lambda: _gram(X, rcfg["orders"], rcfg["activity"], chars))
    elif order3:
        # the primal form's features [X, chi3(X)], for the plain fit and the primal folds
        design = np.hstack([X, _chi3(X, _triples(X.shape[1])) if chars is None else chars[:-1]])
    est, se, mse, df = _xfit(S, X, y, W, strat, incl, yN, dict(rcfg, ard=0), is_extra, gram,
                             kshap, chars, design)
    if cfg["mode"] == "xfit":
        return est, se, df
    full = _fit_row(X, y, W, yN, rcfg["orders"], cfg["ratio"], ard=rcfg["ard"],
                    ard_pool=rcfg["pool_triples"],
                    lam=cfg["lam"], gram=gram, activity=rcfg["activity"], kshap=kshap,
                    design=design, memo=memo)
    est, se = _hybrid(est, se, mse, full, cfg)
    return est, se, df


def _hybrid(est, se, mse, full, cfg):
    """The estimate and standard error of ``mode="hybrid"`` (see :func:`frontier_shapley`)
    from the cross-fit's ``(est, se, mse)`` and the plain fit ``full``, column by
    column: ``full``, with ``se`` raised by the squared gap between the two beyond
    ``se**2``."""
    d = est - full
    # "auto" reaches here only for a single game, the max rule (_components turns it
    # into "pooled" for the components of a mean game)
    if cfg["se_mode"] == "pooled":
        # level from the surrogate's estimated mean squared error, shape
        # from se_x: se_i^2 = se_x,i^2 * max(mse, floor) / sum(se_x^2)
        tot = (se**2).sum(axis=0)
        k2 = np.clip(mse / np.where(tot > 0, tot, 1.0), cfg["k2_min"], cfg["k2_max"])
        est, se = full, np.sqrt(k2[None] * se**2 + cfg["bias_w"] * np.maximum(
            d**2 - cfg["bias_sub"] * se**2, 0.0))
    else:
        # squared bias of the plain fit estimated by d**2 - se**2 (>= 0)
        est, se = full, np.sqrt(cfg["se_scale"]**2 * se**2 + cfg["bias_w"]
                                * np.maximum(d**2 - cfg["bias_sub"] * se**2, 0.0))
    return est, se


def _n_halves_ok(strat, K=2):
    """Every sampled stratum has at least one pair in each of the K folds."""
    js, cnt = np.unique(strat[strat >= 0], return_counts=True)
    return js.size > 0 and bool(np.all(cnt >= K))


def _xfit(S, X, y, W, strat, incl, yN, cfg, is_extra=None, gram=None, kshap=None,
          chars=None, design=None):
    """Cross-fitted regression-adjusted estimate and its standard error.

    The sampled pairs of each stratum are dealt round-robin (in their random draw order)
    into ``K`` folds. For fold ``h``: fit the surrogate ``g_h`` on everything but fold ``h``;
    its residual ``r = o - g_h`` is known on every evaluated pair; the residual's Shapley
    value ``2 sum_pairs c_i(S) r(S)`` is summed exactly over the evaluated pairs outside
    fold ``h`` and, over the rest of each sampled stratum, estimated from fold ``h`` (a
    uniform draw without replacement from the stratum less the other folds, so unbiased
    given them); a stratum drawn with probability ``incl < 1`` is divided by it. ``phi(g_h)
    +`` that is unbiased for ``phi``; the K are averaged. The standard error is that of the
    stratified estimates of the residual (within-stratum variance, finite-population
    correction, folds taken as independent). The extra pairs (``is_extra``, see
    :func:`_design`) are in no fold: every fold's surrogate is fitted on them and they
    are summed exactly, the fold's draw extrapolating to the rest of the stratum.

    ``gram``, ``kshap``: :func:`_gram` of ``X`` (computed here when a fold's fit needs
    them and they are not given); the folds' fits and predictions are slices of them,
    unless ``cfg["prior_of"]`` gives each fold the prior of its own pairs (the pairs'
    prior, :func:`_pair_prior`: learned from the pairs outside the fold, so each fold
    builds its own kernel, from ``chars``, the order-3 characters of ``[X; 1]`` (n + 1,
    F), computed here when not given). ``design``: ``[X, chi3(X)]``, the primal folds'
    features, when the caller has them. The folds'
    surrogates are fitted without ARD (``cfg["ard"]`` is not read).
    Returns ``(estimate, se, mse, df)``: (Pa, O) each but ``mse`` (O,), the surrogates'
    pooled mean squared error.
    """
    folds = _memoized(cfg.get("memo"), "folds",
                      lambda: _xfit_folds(S, strat, incl, is_extra, cfg["folds"]))
    est, resid, Tk, R = _xfit_linear(folds, X, y, W, yN, cfg, gram, kshap, chars, design)
    return (est,) + _xfit_spread(folds, resid, Tk, R)


class _Folds:
    """The cross-fit's strata and folds of one design (:func:`_xfit_folds`)."""

    __slots__ = ("K", "J", "coef", "jj", "fold", "unit", "in_j", "cell", "n_all", "n_jh",
                 "m_j", "p_j", "sampled", "members", "drawn_at", "set_index", "sums")

    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


def _xfit_folds(S, strat, incl, is_extra, K):
    """The strata with units of the design ``S`` (n, Pa), the fold of each unit pair
    (round robin in draw order within its stratum) and the Shapley coefficients of the
    pairs: what :func:`_xfit_linear` and :func:`_xfit_spread` share."""
    n, Pa = S.shape
    _, m, _ = _pair_strata(Pa)
    w = shapley_weights(Pa)
    sz = S.sum(axis=1)
    coef = 2.0 * np.where(S, w[np.maximum(sz - 1, 0)][:, None],
                          -w[np.minimum(sz, Pa - 1)][:, None])
    sampled = strat >= 0
    if is_extra is None:
        is_extra = np.zeros(n, bool)
    unit = sampled & ~is_extra
    js = np.unique(strat[unit])                              # the strata with units (J,)
    J = js.size
    # stratum of each pair among js (-1 elsewhere) and its fold (round robin in draw order)
    lut = np.full(int(strat.max()) + 2, -1)
    lut[js] = np.arange(J)
    jj = lut[strat]                                          # strat -1 -> lut[-1] = -1
    ju = jj[unit]
    order = np.argsort(ju, kind="stable")
    rank = np.empty(ju.size, dtype=np.int64)
    rank[order] = np.arange(ju.size) - np.searchsorted(ju[order], ju[order])
    fold = np.full(n, -1)
    fold[unit] = rank % K
    in_j = (jj[None, :] == np.arange(J)[:, None]).astype(np.float64)          # (J, n)
    cell = in_j[:, None, :] * (fold[None, None, :] == np.arange(K)[None, :, None])  # (J, K, n)
    p_j = np.zeros(J)
    p_j[jj[jj >= 0]] = incl[jj >= 0]                          # one value per stratum
    # per fold: the stratum totals, fold h's share and the enumerated pairs' total as the
    # rows of one 0/1 matrix (K, 2 J + 1, n) (_set_totals)
    sums = np.concatenate([np.broadcast_to(in_j, (K, J, n)), cell.transpose(1, 0, 2),
                           np.broadcast_to((~sampled)[None, None, :], (K, 1, n))], axis=1)
    # the strata drawn with probability < 1: only their totals enter the spread
    return _Folds(K=K, J=J, coef=coef, jj=jj, fold=fold, unit=unit, in_j=in_j, cell=cell,
                  sums=sums,
                  n_all=in_j.sum(axis=1), n_jh=cell.sum(axis=2), m_j=m[js], p_j=p_j,
                  sampled=sampled, members=[np.flatnonzero(unit & (jj == j)) for j in range(J)],
                  drawn_at=np.flatnonzero(p_j < 1), set_index={})


def _xfit_linear(fo, X, y, W, yN, cfg, gram=None, kshap=None, chars=None, design=None):
    """The part of :func:`_xfit` that is linear in ``(y, yN)``: the cross-fitted estimate
    (Pa, O), each unit pair's residual under the surrogate of its own fold's complement
    (n, O; 0 for the other pairs), the folds' mean stratum totals of the residual
    contributions ``Tk`` (J', Pa, O) of the J' strata drawn with probability < 1
    (``fo.drawn_at``; the others' enter no variance) and each fold's residual correction
    ``R`` (K, Pa, O).
    Linear, so :func:`_shared_maps` takes them of a design once, as matrices."""
    n, Pa = X.shape
    K, J, jj, fold, sums = fo.K, fo.J, fo.jj, fo.fold, fo.sums
    n_all, n_jh, m_j, p_j, coef = fo.n_all, fo.n_jh, fo.m_j, fo.p_j, fo.coef
    O = y.shape[1]
    # kriging fits (of fewer pairs than coefficients) take their kernel from one gram
    kriged = [_uses_kernel(cfg["orders"], cfg["ratio"], n - int(n_jh[:, h].sum()), Pa)
              for h in range(K)]
    prior_of = cfg.get("prior_of")           # a prior of each fold's own pairs
    T = _triples(Pa)
    if prior_of is not None and any(kriged) and chars is None:
        chars = _chi3(np.vstack([X, np.ones((1, Pa))]), T)
    if gram is None and any(kriged) and prior_of is None:
        gram, kshap = _gram(X, cfg["orders"], cfg["activity"])
    if design is None and not all(kriged) and tuple(cfg["orders"]) == (3,) and cfg["ratio"]:
        # the primal folds' features
        design = np.hstack([X, _chi3(X, T) if chars is None else chars[:n]])
    # per fold: the weight scale of each pair (its stratum's pairs over those fitted; 1
    # outside the strata with units: the last entry, for jj = -1)
    nA = n_all[:, None] - n_jh                               # pairs fitted (J, K)
    scale = np.vstack([n_all[:, None] / nA, np.ones((1, K))])
    memo = cfg.get("memo") if prior_of is None else None    # the kriged folds' factors
    resid = np.zeros((n, O))
    T_h = np.zeros((K, J, Pa * O))                           # each fold's stratum totals
    R = np.zeros((K, Pa, O))             # fold h: residual correction phi_x,h - phi(g_h)
    est = np.zeros((Pa, O))
    if any(kriged):
        # the kriged folds' points and values are rows of this (their kernel of gram,
        # their kernel Shapley values of kshap; or of chars under the pairs' prior)
        FY1 = np.vstack([np.hstack([X, y]), np.concatenate([np.ones(Pa), yN])[None]])
    for h in range(K):
        mine = fold == h
        idx = np.flatnonzero(~mine)
        Wh = W[idx] * scale[jj[idx], h]
        prior = cfg["activity"] if prior_of is None else prior_of(idx)
        if kriged[h]:
            # _fit_row's kriging form (no ARD) on the fold's rows of the shared arrays: the
            # gram's slices, or under the pairs' prior (one per fold) the characters'
            idx1 = np.append(idx, n)
            if memo is not None and ("fold", h) in memo:
                K1 = None                            # its factors are kept (_krige)
            elif prior_of is None:
                K1 = gram[np.ix_(idx1, idx1)]
            else:
                Z1 = chars[idx1]
                Zs = Z1 * (_triple_prior(prior, Pa) / T.shape[0])
                K1 = Zs @ Z1.T
            b, alpha = _krige(K1, FY1[idx1], Pa, 1.0 / (Wh / Wh.mean()), cfg["ratio"],
                              memo, ("fold", h))
            if prior_of is None:
                phi_h = 2.0 * b + kshap[idx1].T @ alpha
                fitted = X @ b + gram[:n, idx1] @ alpha
            else:
                # through the fit's order-3 coefficients (cheaper than the cross kernel):
                # each triple's 2/3 to its members, as _order3_result
                beta = Zs.T @ alpha
                phi_h = 2.0 * b + (2.0 / 3.0) * (_incidence(Pa).T @ beta)
                fitted = X @ b + chars[:n] @ beta
        else:
            phi_h, pred = _fit_row(X[idx], y[idx], Wh, yN, cfg["orders"], cfg["ratio"],
                                   predict=True, design=None if design is None else design[idx],
                                   activity=prior)
            fitted = pred(X, design)
        tot = _set_totals(sums[h], coef, y - fitted, fo.set_index, h)  # (2 J + 1, Pa O)
        whole, part = tot[:J], tot[J:2 * J]
        T_h[h] = whole - part + ((m_j - nA[:, h]) / n_jh[:, h])[:, None] * part
        R[h] = (tot[2 * J] + (T_h[h] / p_j[:, None]).sum(axis=0)).reshape(Pa, O)
        resid[mine] = (y - fitted)[mine]
        est += (phi_h + R[h]) / K
    return est, resid, T_h.mean(axis=0).reshape(J, Pa, O)[fo.drawn_at], R


# beyond this many contributions coef_i(S) r(S) (pairs x players x columns), the
# cross-fit's stratum totals are summed set by set instead of as one 0/1 (2 J + 1, n)
# times (n, Pa O) product: a design's maps (n + 1 basis columns) are built 1.2-2.6x
# faster from 100 pairs on (a row's own fit keeps the product up to about 80 players)
_SET_TOTALS_MAX = 2**16


def _set_totals(sets, coef, resid, index=None, key=None):
    """``sets @ contrib`` (rows of 0 and 1 over the pairs, (m, n)), ``contrib`` the pairs'
    residual contributions ``coef[i, p] * resid[i, c]`` as (n, Pa O): one product when
    they are few, else one ``coef[set].T @ resid[set]`` per set, the sets' pairs kept in
    ``index[key]`` (a dict) when given (the folds' sets are the design's: the rows of a
    design fitted one by one find them once)."""
    n, Pa = coef.shape
    O = resid.shape[1]
    if n * Pa * O <= _SET_TOTALS_MAX:
        return sets @ (coef[:, :, None] * resid[:, None, :]).reshape(n, Pa * O)
    at = None if index is None else index.get(key)
    if at is None:
        at = [np.flatnonzero(row) for row in sets]
        if index is not None:
            index[key] = at
    tot = np.empty((sets.shape[0], Pa, O))
    for k, a in enumerate(at):
        tot[k] = coef[a].T @ resid[a]
    return tot.reshape(sets.shape[0], Pa * O)


def _xfit_spread(fo, resid, Tk, R):
    """``(se, mse, df)`` of :func:`_xfit` from its linear parts (:func:`_xfit_linear`):
    the stratified variance of the units' residual contributions. Every sum runs over
    pairs, strata or folds of one column at a time (no matrix product), so a column's
    result does not depend on the other columns (the rows that share a design,
    :func:`_shared_solve`)."""
    K, J, Pa, O = fo.K, fo.J, R.shape[1], resid.shape[1]
    # each stratum's within variance of the units' residual contributions (ddof 1)
    n_u = np.zeros(J)
    s2 = np.zeros((J, Pa, O))
    for j in range(J):
        at = fo.members[j]
        Zj = fo.coef[at][:, :, None] * resid[at][:, None, :]                    # (m_j, Pa, O)
        n_u[j] = Zj.shape[0]
        s2[j] = ((Zj - Zj.sum(axis=0) / n_u[j]) ** 2).sum(axis=0) / (n_u[j] - 1.0)
    Np = fo.m_j[:, None] - (fo.n_all[:, None] - fo.n_jh)                        # (J, K)
    fpc = Np**2 * np.maximum(0.0, 1.0 - fo.n_jh / Np) / fo.n_jh / fo.p_j[:, None] ** 2
    vh = fpc[:, :, None, None] * s2[:, None]                                    # (J, K, Pa, O)
    v_j = vh.sum(axis=1) / K**2
    var_h = vh.sum(axis=0)                                                      # (K, Pa, O)
    # the strata drawn with probability p < 1 (Tk, fo.drawn_at): (1 - p) / p^2 T^2 more
    drawn = (1 - fo.p_j[fo.drawn_at]) / fo.p_j[fo.drawn_at] ** 2
    if drawn.size:
        v_j[fo.drawn_at] += Tk**2 * drawn[:, None, None]
        var_h = var_h + (Tk**2 * drawn[:, None, None]).sum(axis=0)[None]
    var = v_j.sum(axis=0)
    # mean squared error of the surrogate's own Shapley values phi(g_h): E R_h^2 - Var R_h,
    # pooled over the players (per output) and the folds
    mse = (R**2 - var_h).mean(axis=0).sum(axis=0)                              # (O,)
    df = welch_satterthwaite(v_j, (n_u - 1.0)[:, None, None], axis=0)
    return np.sqrt(var), mse, df


def _uses_kernel(orders, ratio, n, Pa):
    """Whether :func:`_fit_row` on ``n`` pairs of ``Pa`` players solves in the kriging
    form (the one that uses the kernel)."""
    if not orders or ratio == 0:
        return False
    kriging, primal = _order3_unknowns(n, Pa)
    return not (tuple(orders) == (3,) and kriging > primal)


def _unit_pattern(G):
    """G numbers with mean 0 and sample sd 1 (+-1 alternating, centred, scaled)."""
    z = np.where(np.arange(G) % 2 == 0, 1.0, -1.0)
    z -= z.mean()
    return z / z.std(ddof=1)


def _project(est, delta):
    """Spread the round-off efficiency gap equally over the players."""
    return est + (delta - est.sum(axis=0))[None, :] / est.shape[0]


def _jackknife(X, y, W, strat, yN, cfg, est):
    sampled = np.flatnonzero(strat >= 0)
    if sampled.size < 2:
        return None
    G = min(sampled.size, MAX_GROUPS)
    group = np.full(strat.size, -1)
    # round robin within each stratum, so that each group takes a share of every stratum
    order = sampled[np.lexsort((sampled, strat[sampled]))]
    group[order] = np.arange(order.size) % G
    pseudo = np.empty((G,) + est.shape)
    for g in range(G):
        keep = group != g
        Wg = W.copy()
        for j in np.unique(strat[sampled]):
            in_j = strat == j
            kept = (in_j & keep).sum()
            if kept:
                Wg[in_j] *= in_j.sum() / kept
        prior = cfg["activity"] if cfg.get("prior_of") is None else cfg["prior_of"](keep)
        fit = _fit_row(X[keep], y[keep], Wg[keep], yN, cfg["orders"], cfg["ratio"],
                       ard=cfg["ard"], lam=cfg["lam"], activity=prior,
                       ard_pool=cfg["pool_triples"])
        pseudo[g] = G * est - (G - 1) * _project(fit, 2 * yN)
    return pseudo


# --------------------------------------------------------------------------- shared designs

class _DesignCache:
    """The shared designs by key, the oldest dropped beyond ``max_bytes`` of their arrays
    (a running total: a call of many rows adds hundreds of designs); thread-safe, since
    explainers' batches may run in threads."""

    def __init__(self, max_bytes):
        self.max_bytes = max_bytes
        self._designs, self._bytes = {}, 0
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            return self._designs.get(key)

    def put(self, key, design):
        with self._lock:
            if key in self._designs:          # another thread computed it meanwhile
                return
            self._designs[key] = design
            self._bytes += _design_bytes(design)
            while self._bytes > self.max_bytes and len(self._designs) > 1:
                self._bytes -= _design_bytes(self._designs.pop(next(iter(self._designs))))

    def clear(self):
        with self._lock:
            self._designs, self._bytes = {}, 0

    def __len__(self):
        return len(self._designs)


# the shared designs' linear maps, by (design_seed, Pa, n_pairs, stream, knobs, with_se): a
# map costs a few fits of its design (O(n^3)), then each row one matrix-vector product; the
# oldest are dropped beyond 64 MiB of maps
_shared_cache = _DesignCache(64 * 2**20)
# a design whose basis fits would take more than this many bytes (n_pairs * Pa * (n_pairs
# + 1) floats, the pairs' contributions of every basis column) is solved row by row (the
# same flat-prior fit, without maps): it also bounds the maps' cost, O(n_pairs^3) per fold,
# about 20 rows' own fits for wide rows, paid once per design, which a design shared by few
# rows (e.g. a mean game's components) would not repay
_MAP_MAX_BYTES = 64 * 2**20


class _SharedDesign:
    """One design of the shared frontier (:func:`_shared_design`): the pairs ``S`` and
    their weights, strata, inclusion probabilities and extra flags (:func:`_design`),
    ``kind`` ("border", "xfit", "jack" or "fit", the branches of
    :func:`_solve_fit_row`; "rowwise" beyond ``_MAP_MAX_BYTES``), ``full`` (Pa, n + 1):
    the plain fit's linear map,
    applied to ``[y; yN]``, and ``M`` (rows, n + 1): the standard error's linear maps
    stacked, with ``parts`` naming their row slices (the fit's map stands alone so that
    the values do not depend on ``with_se``); ``local`` (2 n, Pa): the pairs' coalitions
    over the active players (:func:`_pair_masks`) and ``border`` their size-1 pairs'
    positions (:func:`_border_positions`); ``path`` its rows' (:func:`_design_path`)."""

    __slots__ = ("S", "W", "strat", "incl", "extra", "kind", "full", "M", "parts", "folds",
                 "local", "border", "path")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


def _knobs(cfg):
    """The knobs of ``cfg`` as a hashable key of the shared designs' cache."""
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in cfg.items()
                        if k not in ("activity", "prior_of", "memo")))


def _shared_design(Pa, n_pairs, design_seed, cfg, with_se, stream=0, knobs=None):
    """The design of every row with ``Pa`` active players and ``n_pairs`` pairs, drawn
    from ``design_seed``, ``(Pa, n_pairs)`` and ``stream`` (for a mean game's components,
    how many of the row's earlier components share ``(Pa, n_pairs)``) alone, with the
    linear maps that take a row's ``[y; yN]`` (its pairs' odd values and the full
    coalition's) to its estimate and the linear parts of its standard error (cached). The
    fit has a flat order-3 prior and no ARD: the estimate is a fixed linear function of
    the row's values. ``knobs``: :func:`_knobs` of ``cfg``, when the caller has it."""
    knobs = _knobs(cfg) if knobs is None else knobs
    key = (int(design_seed), int(Pa), int(n_pairs), int(stream), knobs, bool(with_se))
    hit = _shared_cache.get(key)
    if hit is not None:
        return hit
    rng = np.random.default_rng(np.random.SeedSequence(
        entropy=int(design_seed), spawn_key=(int(Pa), int(n_pairs), int(stream))))
    # mode="hybrid" (_check_design_seed): drawn in the cross-fit's units
    S, W, strat, incl, extra = _design(Pa, n_pairs, rng, cfg["alloc"], cfg["ht"],
                                       unit=cfg["folds"])
    n = S.shape[0]
    local = _pair_masks(S, np.arange(Pa), Pa)
    sd = _SharedDesign(S=S, W=W, strat=strat, incl=incl, extra=extra, kind="border",
                       local=local, border=_border_positions(local),
                       path=_design_path(S, strat, cfg))
    if 8 * n * (n + 1) * Pa > _MAP_MAX_BYTES and not _is_border(S):
        sd.kind = "rowwise"
    elif not _is_border(S):
        X = np.where(S, 1.0, -1.0)
        small = S.shape[0] < cfg["linear_below"] * Pa or _too_wide(n, Pa, cfg)
        orders = () if small else cfg["orders"]
        rcfg = dict(cfg, ard=0, pool_triples=False, orders=orders, activity=None,
                    prior_of=None)
        # the basis of [y; yN]: column c < n is pair c's odd value, column n the full's
        Iy, IyN = np.eye(n, n + 1), np.eye(1, n + 1, n)[0]
        full = _fit_row(X, Iy, W, IyN, orders, cfg["ratio"])
        maps, names = [], []
        kind = "fit"
        if with_se and _n_halves_ok(strat[~extra], cfg["folds"]):
            kind = "xfit"
            sd.folds = _xfit_folds(S, strat, incl, extra, cfg["folds"])
            est_x, resid, Tk, R = _xfit_linear(sd.folds, X, Iy, W, IyN, rcfg)
            maps += [est_x, R.reshape(-1, n + 1), Tk.reshape(-1, n + 1), resid]
            names += ["est_x", "R", "Tk", "resid"]
        elif with_se:
            kind = "jack"
            u = _jackknife(X, Iy, W, np.where(extra, -2, strat), IyN, rcfg, full)
            if u is not None:
                maps.append(u.reshape(-1, n + 1))
                names.append("jack")
        sizes = np.cumsum([0] + [m.shape[0] for m in maps])
        sd.kind, sd.full = kind, np.ascontiguousarray(full)
        sd.M = np.ascontiguousarray(np.vstack(maps)) if maps else None
        sd.parts = {nm: slice(int(a), int(b)) for nm, a, b in zip(names, sizes[:-1], sizes[1:])}
    for a in (sd.S, sd.W, sd.strat, sd.incl, sd.extra, sd.full, sd.M, sd.local, *sd.border):
        if a is not None:
            a.flags.writeable = False
    _shared_cache.put(key, sd)
    return sd


def _design_bytes(sd):
    return sum(a.nbytes for a in (sd.S, sd.full, sd.M, sd.local) if a is not None)


def _shared_solve(sd, vals, v0, v1, cfg, with_se, scale=None):
    """Estimates of the rows that share the design ``sd`` from their pairs' values
    ``vals`` (R, 2 n, O) (a coalition, then its complement) and ends ``v0``, ``v1`` (R,
    O): ``(est, se, df)``, each (R, Pa, O) (``se`` NaN where a row has no error estimate;
    ``None`` and ``inf`` without ``with_se``). Each row's numbers come from one
    matrix-vector product per output and sums over its own pairs, players or folds: a
    row's result does not depend on the other rows. ``scale`` (R,): the rows'
    power-of-two scales (:func:`_row_scales`), None when all are 1."""
    R, _, O = vals.shape
    if sd.kind == "rowwise":
        return _shared_rowwise(sd, vals, v0, v1, cfg, with_se, scale)
    lone = R * O == 1
    if lone and (with_se or sd.kind == "border"):
        # numpy sums a lone column's entries pairwise (as one contiguous run), two or more
        # columns entry by entry: the row twice takes the arithmetic of any larger call.
        # Without standard errors the one sum left (the projection's, over the players)
        # runs down a column of the transposed product whatever the number of columns, so
        # a lone row is solved as it is
        est, se, df = _shared_solve(sd, np.repeat(vals, 2, axis=0), np.repeat(v0, 2, axis=0),
                                    np.repeat(v1, 2, axis=0), cfg, with_se,
                                    None if scale is None else np.repeat(scale, 2))
        return est[:1], (None if se is None else se[:1]), (df if se is None else df[:1])
    Pa = sd.S.shape[1]
    # a row far from 1 in its power-of-two scale (exact): its squares would over- or
    # underflow
    if scale is None:
        c = None
        vS, vC, v0c, v1c = vals[:, 0::2], vals[:, 1::2], v0, v1
    else:
        c = scale[:, None]
        vS, vC = vals[:, 0::2] / c[:, :, None], vals[:, 1::2] / c[:, :, None]   # (R, n, O)
        v0c, v1c = v0 / c, v1 / c
    yN = (v1c - v0c) / 2.0
    C = R * O

    def cols(a):                       # (R, k, O) -> (k, R O): one column per row and output
        return a.transpose(1, 0, 2).reshape(a.shape[1], C)

    if sd.kind == "border":
        est = _project(_border_row(sd.S, cols(vS), cols(vC), v0c.ravel(), v1c.ravel(),
                                   cfg["border_c"]), 2 * yN.ravel())
        se = np.full(est.shape, np.nan) if with_se else None
        df = np.inf
    else:
        yaug = np.concatenate([(vS - vC) / 2.0, yN[:, None, :]], axis=1)     # (R, n + 1, O)
        yaug = yaug.transpose(0, 2, 1)[..., None]                            # (R, O, n + 1, 1)

        def apply(M):
            # one matrix-vector product per row and output (a stacked matmul, not one
            # product of all rows: its round-off would depend on how many rows there are)
            return np.matmul(M, yaug)[..., 0].reshape(C, -1).T              # (m, R O)

        out = apply(sd.M) if with_se and sd.M is not None else None

        def part(name, shape=(Pa,)):
            return out[sd.parts[name]].reshape(shape + (C,))

        est, se, df = apply(sd.full), None, np.inf
        if with_se and sd.kind == "xfit":
            fo = sd.folds
            se_x, mse, df = _xfit_spread(fo, part("resid", (fo.coef.shape[0],)),
                                         part("Tk", (fo.drawn_at.size, Pa)),
                                         part("R", (fo.K, Pa)))
            est, se = _hybrid(part("est_x"), se_x, mse, est, cfg)
        elif with_se and sd.parts and "jack" in sd.parts:
            u = part("jack", (-1, Pa))
            se, df = unit_std(u, axis=0), u.shape[0] - 1.0
        elif with_se:
            se = np.full(est.shape, np.nan)
        est = _project(est, 2 * yN.ravel())
    back = lambda a: a.reshape(Pa, R, O).transpose(1, 0, 2)       # noqa: E731
    est = back(est) if c is None else back(est) * c[:, :, None]
    if not with_se:
        return est, None, np.inf
    df = np.broadcast_to(np.asarray(df, dtype=np.float64), (Pa, C))
    se = back(se) if c is None else back(se) * c[:, :, None]
    return est, se, back(np.array(df))


def _shared_rowwise(sd, vals, v0, v1, cfg, with_se, scale=None):
    """:func:`_shared_solve` for a design too large for maps: each row's flat-prior fit
    and cross-fit on the shared design, by :func:`_solve_fit_row`. What depends on the
    design alone (the gram, the folds, the covariances' factors: ``(n + 1)^2`` floats per
    fit) is computed by the call's first row and reused by the others, each row solving
    its own values with the same arithmetic either way (so its bits do not depend on the
    call); it is not kept across calls (its memory would be the maps' again)."""
    R, _, O = vals.shape
    Pa = sd.S.shape[1]
    rcfg = dict(cfg, prior="flat", ard=0, memo={})
    extra = (np.arange(Pa), sd.S, sd.W, sd.strat, sd.incl, sd.extra)
    est = np.empty((R, Pa, O))
    se = np.full((R, Pa, O), np.nan) if with_se else None
    df = np.full((R, Pa, O), np.inf)
    for r in range(R):
        _, est[r], s, d = _solve_scaled(extra, vals[r], v0[r], v1[r], rcfg, True, with_se,
                                        c=1.0 if scale is None else float(scale[r]))
        if with_se:
            se[r], df[r] = s, d
    return est, se, (df if with_se else np.inf)


def _check_design_seed(design_seed, cfg):
    if isinstance(design_seed, bool) or int(design_seed) != design_seed or design_seed < 0:
        raise ValueError(f"design_seed must be a non-negative integer; got {design_seed!r}.")
    if cfg["mode"] != "hybrid":
        raise ValueError(f"shared designs (design_seed) need mode='hybrid'; got "
                         f"{cfg['mode']!r}.")
    return int(design_seed)
