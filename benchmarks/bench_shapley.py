"""Shapley estimators at equal coalition budgets: ours against shapiq's order-1 approximators.

Every game has exact truth: the small games (Adult, 12 players; German credit, 20 players)
are dumped as full tables of coalition values (all ``2**P`` coalitions of each explained
row, index = binary code of the mask, bit ``p`` = player ``p``), so that our estimators and
shapiq's (run in their own Python 3.12 venv by ``_shapiq_side.py``) evaluate the very same
game; the 32-player game is a dividend game with planted interactions (closed-form truth).
Two held-out games (``HELD_OUT``: an RBF SVM on Australian credit, 14 players; a random
forest on COMPAS, 10 players) run when ``--games`` names them: nothing was tuned on them.

Budgets: ``n_evals`` in 2, 4, ..., 64 coalition evaluations per player and row, i.e.
``n_evals * P`` coalitions besides the empty and the full one; shapiq gets
``budget = n_evals * P + 2`` (its budget counts the empty and full coalitions).

Usage::

    python benchmarks/bench_shapley.py [--quick] [--out DIR] [--skip-shapiq]
        [--shapiq-python VENV/bin/python]   (a Python 3.12 venv with shapiq 1.8; or SHAPIQ_PYTHON)
        [--skip-shap] [--cover-seeds 32]    (the coverage of frontier's intervals: 32 seeds)
        [--shap-seeds 8]                    (shap's estimators: 8 seeds, each row its own)
        [--games australian_svm_bg16,compas_forest_bg16]   (the held-out games)

Steps: build the tables (cached in ``DIR``), run shapiq (cached), run ours, print the mean
absolute error of every estimator, the ratio ours-best / shapiq-best per game and budget,
the 95% interval coverage of ``frontier`` and the time per row outside the model.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from sklearn_xai.shapley import ALGORITHMS, Game
from sklearn_xai.shapley._estimators import all_masks, exact_shapley, unit_std
from sklearn_xai.testing import DividendGame

BUDGETS = (2, 4, 8, 16, 32, 64)
HERE = Path(__file__).resolve().parent


class TableGame(Game):
    """A game given by each row's full table of coalition values (one output)."""

    def __init__(self, tables, active=None, components=None, comp_active=None):
        self.tables = np.asarray(tables, dtype=np.float64)       # (n, 2**P)
        self._P = int(round(np.log2(self.tables.shape[1])))
        self._active = active
        # (n, 2**P, K): the table of each imputation row, whose mean over K is the game
        self._components, self._comp_active = components, comp_active
        self.n_evaluations = 0
        self._n_outputs = 1

    def imputation_components(self):
        if self._components is None:
            return None
        if getattr(self, "_split", None) is None:  # built once: its tables are large
            n, C, K = self._components.shape
            tables = np.ascontiguousarray(self._components.transpose(0, 2, 1)).reshape(n * K, C)
            self._split = TableGame(tables, self._comp_active.reshape(n * K, -1)), K
        game, K = self._split
        game.n_evaluations = 0
        return game, K

    @property
    def n_players(self):
        return self._P

    @property
    def n_rows(self):
        return self.tables.shape[0]

    def active_players(self):
        return self._active

    def _codes(self, masks):
        """Each coalition's row of the table: bit ``p`` of the index is player ``p``."""
        return masks.astype(np.int64) @ (np.int64(1) << np.arange(self._P, dtype=np.int64))

    def value(self, masks, rows=None, count=True):
        masks, row_ids = self._check_masks(masks, rows)
        codes = self._codes(masks)
        if codes.ndim == 1:
            out = self.tables[row_ids[:, None], codes[None, :]]
        else:
            out = self.tables[row_ids[:, None], codes]
        self._count(row_ids.size, masks.shape[-2], count)
        return out[:, :, None]

    def value_each(self, masks, count=True):
        # every row's coalitions in one lookup, as ImputationGame packs them into one
        # model call (the base class's one value call per coalition count would time
        # the table's bookkeeping as the estimator's)
        sizes = np.array([m.shape[0] for m in masks], dtype=np.int64)
        if len(masks) != self.n_rows:
            raise ValueError("value_each needs one mask block per row.")
        codes = self._codes(np.concatenate([np.asarray(m, dtype=bool).reshape(-1, self._P)
                                            for m in masks]))
        vals = self.tables[np.repeat(np.arange(self.n_rows), sizes), codes][:, None]
        if count:
            self.n_evaluations += int(sizes.sum())
        ends = np.cumsum(sizes).tolist()
        return [vals[a:b] for a, b in zip([0] + ends[:-1], ends)]

    def _value_blocks(self, blocks, count=True):
        # each block (rows, masks (R, C, P)) by one value call (the base class would route
        # the blocks through value_each above once it is overridden)
        return [self.value(masks, rows=np.asarray(rows), count=count) for rows, masks in blocks]


# --------------------------------------------------------------------------- games

def _adult():
    from sklearn_xai.datasets import load_adult
    X, y = load_adult(subset="train")
    X = X.drop(columns=["fnlwgt", "education"])
    return _float_codes(X), y.to_numpy(), list(X.columns)


def _float_codes(X):
    """The frame ``X`` as a float array, its categorical columns by their codes."""
    A = np.empty(X.shape, dtype=np.float64)
    for j, c in enumerate(X.columns):
        s = X[c]
        A[:, j] = s.cat.codes.to_numpy() if hasattr(s, "cat") else s.to_numpy()
    return A


def _german():
    from sklearn_xai.datasets import load_german_credit
    X, y = load_german_credit()
    return _float_codes(X), y.to_numpy(), list(X.columns)


def _shared(name):
    """A shared dataset (:func:`~sklearn_xai.datasets.load_shared_dataset`) as float codes
    (categories by their codes, as the other games)."""
    from sklearn_xai.datasets import load_shared_dataset
    X, y = load_shared_dataset(name)
    return _float_codes(X), y.to_numpy()


def _svm(A, y):
    """Standardized features, an RBF support vector machine; its decision function."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    m = make_pipeline(StandardScaler(), SVC(kernel="rbf", C=1.0)).fit(A, y)
    return lambda Z: m.decision_function(np.asarray(Z, dtype=np.float64))[:, None]


def _forest(A, y, seed=0):
    """scikit-learn's random forest (100 fully grown trees); P(class 1)."""
    from sklearn.ensemble import RandomForestClassifier
    m = RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=1).fit(A, y)
    return lambda Z: m.predict_proba(np.asarray(Z, dtype=np.float64))[:, 1:]


def _xgb(A, y, seed=0):
    import xgboost
    m = xgboost.XGBClassifier(n_estimators=100, max_depth=4, learning_rate=0.1, n_jobs=1,
                              random_state=seed, tree_method="hist")
    m.fit(A, y)
    booster = m.get_booster()

    def f(Z):
        return booster.inplace_predict(np.ascontiguousarray(Z, dtype=np.float32))[:, None]
    return f


def _mlp(A, y, seed=0):
    import torch
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    mu, sd = A.mean(axis=0), A.std(axis=0) + 1e-9
    Xt = torch.tensor((A - mu) / sd, dtype=torch.float32)
    yt = torch.tensor(y, dtype=torch.float32)
    net = torch.nn.Sequential(torch.nn.Linear(A.shape[1], 64), torch.nn.Softplus(),
                              torch.nn.Linear(64, 64), torch.nn.Softplus(),
                              torch.nn.Linear(64, 1))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(8):
        perm = torch.randperm(len(yt), generator=g)
        for k in range(0, len(yt), 256):
            idx = perm[k:k + 256]
            opt.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                net(Xt[idx])[:, 0], yt[idx])
            loss.backward()
            opt.step()
    net.eval()

    def f(Z):
        with torch.no_grad():
            z = torch.tensor((np.asarray(Z, dtype=np.float64) - mu) / sd, dtype=torch.float32)
            return torch.sigmoid(net(z)).numpy().astype(np.float64)
    return f


def _tables(f, X, R, P, chunk_rows=2**20):
    """Full tables of every imputation row, (n, 2**P, K) float32 (the models' own precision):
    ``f(x_S, R_k[~S])``; the game is their mean over ``k``."""
    masks = all_masks(P)
    K = R.shape[0]
    out = np.empty((X.shape[0], masks.shape[0], K), dtype=np.float32)
    step = max(1, chunk_rows // K)
    for r, x in enumerate(X):
        for c0 in range(0, masks.shape[0], step):
            m = masks[c0:c0 + step]
            hyb = np.where(m[:, None, :], x[None, None, :], R[None, :, :])
            out[r, c0:c0 + step] = f(hyb.reshape(-1, P)).reshape(m.shape[0], K)
    return out


def _active(X, R):
    return ~np.all(X[:, None, :] == R[None], axis=1)


def build(out, quick, adult_rows=None, games=None, german_rows=None):
    """Write the tables (or terms) of ``games`` (default all) to ``out``; cached.
    ``adult_rows``: explained rows of the Adult games (default 6 quick, 12 full);
    ``german_rows``: of the German game (default 2 quick, 4 full; 2**20 coalitions of 16
    components per row, 128 MiB each)."""
    games = GAMES if games is None else games
    out.mkdir(parents=True, exist_ok=True)
    n_small = adult_rows or (6 if quick else 12)
    n_german = german_rows or (2 if quick else 4)
    specs = {}
    rng = np.random.default_rng(0)
    need = [g for g in ("adult_xgb_ref", "adult_xgb_bg16", "adult_mlp_ref", "german_xgb_bg16")
            if g in games and not (out / f"{g}.npz").exists()]
    if any(g.startswith("adult") for g in need):
        A, y, _ = _adult()
        rows = A[rng.choice(len(A), n_small, replace=False)]
        ref = np.median(A, axis=0)[None]
        bg = A[rng.choice(len(A), 16, replace=False)]
        fx = _xgb(A, y)
        specs["adult_xgb_ref"] = (fx, rows, ref)
        specs["adult_xgb_bg16"] = (fx, rows, bg)
        if "adult_mlp_ref" in need:
            specs["adult_mlp_ref"] = (_mlp(A, y), rows, ref)
    if "german_xgb_bg16" in need:
        A, y, _ = _german()
        g_rng = np.random.default_rng(1)
        rows = A[g_rng.choice(len(A), n_german, replace=False)]
        bg = A[g_rng.choice(len(A), 16, replace=False)]
        specs["german_xgb_bg16"] = (_xgb(A, y), rows, bg)
    # the held-out games (HELD_OUT): other data, other model families; nothing of the
    # estimators was tuned on them
    for name, dataset, model, seed in (("australian_svm_bg16", "australian", _svm, 3),
                                       ("compas_forest_bg16", "compas", _forest, 4)):
        if name in games and not (out / f"{name}.npz").exists():
            A, y = _shared(dataset)
            h_rng = np.random.default_rng(seed)
            pick = h_rng.choice(len(A), (4 if quick else 8) + 16, replace=False)
            specs[name] = (model(A, y), A[pick[:-16]], A[pick[-16:]])
            need.append(name)
    for name in need:
        f, rows, R = specs[name]
        t0 = time.perf_counter()
        comp = _tables(f, rows, R, rows.shape[1])
        np.savez(out / f"{name}.npz", tables=comp.astype(np.float64).mean(axis=2),
                 components=comp, active=_active(rows, R), references=R, rows=rows)
        tab = comp
        print(f"built {name}: {tab.shape} in {time.perf_counter() - t0:.1f} s", flush=True)
    if "dividend32" in games and not (out / "dividend32.npz").exists():
        P, n = 32, (4 if quick else 8)
        d_rng = np.random.default_rng(2)
        terms = {}
        for order, count, scale in ((1, P, 1.0), (2, 40, 0.6), (3, 30, 0.5), (4, 12, 0.5),
                                    (5, 6, 0.5)):
            for _ in range(count):
                T = tuple(sorted(d_rng.choice(P, order, replace=False).tolist()))
                terms[T] = d_rng.normal(0, scale, n)
        keys = sorted(terms)
        np.savez(out / "dividend32.npz", n_players=P,
                 sets=np.array([sum(1 << p for p in T) for T in keys], dtype=np.int64),
                 dividends=np.array([terms[T] for T in keys]).T)  # (n, n_terms)
        print("built dividend32", flush=True)


def load_game(out, name):
    """The game (its components built, so that no timing includes them) and its truth."""
    game, truth = _load_game(out, name)
    game.imputation_components()
    return game, truth


def _load_game(out, name):
    z = np.load(out / f"{name}.npz")
    if "tables" in z:
        comp = comp_active = None
        if "components" in z and z["components"].shape[2] > 1:
            comp = z["components"]
            X, R = z["rows"], z["references"]
            comp_active = X[:, None, :] != R[None, :, :]          # (n, K, P)
        game = TableGame(z["tables"], z["active"], comp, comp_active)
        return game, exact_shapley(game)[0][:, :, 0]
    P = int(z["n_players"])
    sets, div = z["sets"], z["dividends"]
    terms = {tuple(p for p in range(P) if (int(s) >> p) & 1): div[:, k]
             for k, s in enumerate(sets)}
    game = DividendGame(P, terms, n_rows=div.shape[0])
    return game, game.shapley_values()[0][:, :, 0]


GAMES = ("adult_xgb_ref", "adult_xgb_bg16", "adult_mlp_ref", "german_xgb_bg16", "dividend32")
# games run on request (--games), never used to tune the estimators: a check that their
# standing holds beyond the games they were measured on (Australian credit, 14 players, an
# RBF SVM's decision function; COMPAS, 10 players, a random forest's probability)
HELD_OUT = ("australian_svm_bg16", "compas_forest_bg16")


# --------------------------------------------------------------------------- ours

def _row_gens(seed, n):
    """One generator per row, row ``r`` of seed ``seed`` drawing from ``[seed, r]``."""
    return [np.random.default_rng([seed, r]) for r in range(n)]


def _frontier_mae(game, truth, n_evals, seeds, **cfg):
    """The frontier's mean absolute error on ``game`` against ``truth`` (n, P), averaged
    over ``seeds`` (per-row generators, :func:`_row_gens`), with frontier knobs ``cfg``."""
    from sklearn_xai.shapley._frontier import frontier_shapley
    return float(np.mean([np.abs(frontier_shapley(game, n_evals, _row_gens(s, game.n_rows),
                                                  **cfg)[0][:, :, 0] - truth).mean()
                          for s in seeds]))


def _cover_counts(fn, game, truth, n_evals, seed, **cfg):
    """``(hits, values)`` of the 95 % intervals of ``fn(..., return_units=True)`` on one
    seed: the values whose ``phi +- 1.96 se`` holds the truth, among those with a
    standard error (NaN, no estimate, and 0, exact up to round-off, left out)."""
    gens = _row_gens(seed, game.n_rows)
    phi, _, units = fn(game, n_evals, gens, return_units=True, **cfg)
    if units is None:
        return 0, 0
    se = unit_std(units)[:, :, 0]
    ok = se > 1e-12
    hit = np.abs(phi[:, :, 0] - truth) <= 1.96 * se
    return int(hit[ok].sum()), int(ok.sum())


def run_ours(out, seeds, games=GAMES, methods=None, max_units_budget=16, cover_seeds=None):
    """MAE, time and evaluations of our estimators over ``seeds``; the 95 % interval
    coverage of ``frontier`` over ``cover_seeds`` (default ``seeds``: coverage needs more
    draws than the error to be read to +-2 %)."""
    from sklearn_xai.shapley._frontier import frontier_shapley
    methods = methods or {"kernel": ALGORITHMS["kernel"],
                          "permutation": ALGORITHMS["permutation"],
                          "frontier": frontier_shapley}
    res = {}
    for name in games:
        game, truth = load_game(out, name)
        n = game.n_rows
        for mname, fn in methods.items():
            for b in BUDGETS:
                errs, cover, secs, evals = [], [], 0.0, 0
                for seed in seeds:
                    gens = _row_gens(seed, n)
                    game.n_evaluations = 0
                    t0 = time.perf_counter()
                    phi = fn(game, b, gens)[0][:, :, 0]
                    secs += time.perf_counter() - t0
                    evals = max(evals, game.n_evaluations)
                    errs.append(np.abs(phi - truth).mean(axis=1))          # per row
                if mname == "frontier" and b <= max_units_budget:
                    cover = [_cover_counts(fn, game, truth, b, seed)
                             for seed in (cover_seeds or seeds)]
                res[(name, mname, b)] = {
                    "mae": float(np.mean(errs)), "row_mae": np.mean(errs, axis=0),
                    "sec_per_row": secs / (len(seeds) * n),
                    "evals_per_row": evals / n,
                    "cover": (int(sum(c[0] for c in cover)), int(sum(c[1] for c in cover)))}
    return res


def run_shared(out, seeds, games=GAMES, cover_seeds=None, max_units_budget=16):
    """``frontier_shared`` (designs shared by the rows, one ``design_seed`` per seed): MAE,
    time per row of the first call of a seed (it computes the designs' maps: cold) and of
    a second call with the same seed (the maps cached: warm), and the 95 % coverage of its
    intervals over ``cover_seeds``."""
    from sklearn_xai.shapley import _frontier
    from sklearn_xai.shapley._estimators import frontier_shared_shapley
    res = {}
    for name in games:
        game, truth = load_game(out, name)
        n = game.n_rows
        for b in BUDGETS:
            errs, cold, warm, evals = [], 0.0, 0.0, 0
            for seed in seeds:
                _frontier._shared_cache.clear()
                game.n_evaluations = 0
                t0 = time.perf_counter()
                phi = frontier_shared_shapley(game, b, design_seed=seed)[0][:, :, 0]
                cold += time.perf_counter() - t0
                evals = max(evals, game.n_evaluations)
                t0 = time.perf_counter()
                frontier_shared_shapley(game, b, design_seed=seed)
                warm += time.perf_counter() - t0
                errs.append(np.abs(phi - truth).mean(axis=1))
            def shared(game, n_evals, generators, **kw):
                return frontier_shared_shapley(game, n_evals, **kw)   # its seed, not these
            cover = ([_cover_counts(shared, game, truth, b, seed, design_seed=seed)
                      for seed in (cover_seeds or seeds)]
                     if b <= max_units_budget else [])
            res[(name, b)] = {"mae": float(np.mean(errs)), "evals_per_row": evals / n,
                              "cold_ms": cold / (len(seeds) * n) * 1e3,
                              "warm_ms": warm / (len(seeds) * n) * 1e3,
                              "cover": (sum(c[0] for c in cover), sum(c[1] for c in cover))}
    return res


# --------------------------------------------------------------------------- shap

def run_shap(out, seeds, games=GAMES):
    """shap's PermutationExplainer and KernelExplainer on the same games, at the same
    number of coalition evaluations per row (``max_evals`` / ``nsamples`` =
    ``n_evals * P + 2``). The game is handed to shap as a model of binary inputs: the
    explained row is all ones, the one background row all zeros, so shap's masked rows
    are the coalitions' indicator vectors and the model returns ``v(S)``. Each (seed,
    row) gets its own seed: ``PermutationExplainer(seed=None)`` reseeds numpy's global
    state from the operating system, so without one its draws are not reproducible."""
    import warnings

    import shap
    res = {}
    for name in games:
        game, truth = load_game(out, name)
        P, n = game.n_players, game.n_rows
        ones, zeros = np.ones((1, P)), np.zeros((1, P))
        for b in BUDGETS:
            errs = {"shap_permutation": [], "shap_kernel": []}
            secs = dict.fromkeys(errs, 0.0)
            for seed in seeds:
                est = {k: np.empty((n, P)) for k in errs}
                for r in range(n):
                    def f(Z, r=r):
                        return game.value(np.asarray(Z) > 0.5, rows=slice(r, r + 1),
                                          count=False)[0, :, 0]
                    t0 = time.perf_counter()
                    ex = shap.PermutationExplainer(f, shap.maskers.Independent(zeros),
                                                   seed=seed * 100_003 + r)
                    est["shap_permutation"][r] = ex(ones, max_evals=b * P + 2).values[0]
                    secs["shap_permutation"] += time.perf_counter() - t0
                    np.random.seed(seed * 100_003 + r)  # noqa: NPY002 (shap's global state)
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        kx = shap.KernelExplainer(f, zeros)
                        est["shap_kernel"][r] = np.ravel(kx.shap_values(
                            ones, nsamples=b * P + 2, silent=True))[:P]
                    secs["shap_kernel"] += time.perf_counter() - t0
                for k in errs:
                    errs[k].append(np.abs(est[k] - truth).mean(axis=1))   # per row
            for k in errs:
                res[(name, k, b)] = {"mae": float(np.mean(errs[k])),
                                     "row_mae": np.mean(errs[k], axis=0),
                                     "sec_per_row": secs[k] / (len(seeds) * n)}
    return res


# --------------------------------------------------------------------------- shapiq

def run_shapiq(out, python, seeds, quick, games):
    """shapiq's estimates per game (``_shapiq_side.py`` in shapiq's venv; resumable)."""
    cmd = [python, str(HERE / "_shapiq_side.py"), "--dir", str(out), "--seeds",
           ",".join(map(str, seeds)), "--budgets", ",".join(map(str, BUDGETS)),
           "--games", ",".join(games)]
    if quick:
        cmd.append("--quick")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return {g: json.loads((out / f"shapiq_{g}.json").read_text()) for g in games
            if (out / f"shapiq_{g}.json").exists()}


def load_shapiq(out, games):
    return {g: json.loads((out / f"shapiq_{g}.json").read_text()) for g in games
            if (out / f"shapiq_{g}.json").exists()}


def shapiq_mae(out, sq, name):
    _, truth = _load_game(out, name)
    res = {}
    for key, info in sq.get(name, {}).items():
        est = np.load(out / info["file"])                        # (seeds, n, P)
        if est.shape[0] < 1 or np.isnan(est).any():
            continue
        res[key] = {"mae": float(np.abs(est - truth[None]).mean()),
                    "sec_per_row": info["sec_per_row"] or float("nan"), "budget": info["budget"]}
    return res


def _ours_best(ours, name, b):
    """The result of our method with the lowest MAE on ``name`` at budget ``b``."""
    return min((ours[(name, m, b)] for m in ("kernel", "permutation", "frontier")),
               key=lambda v: v["mae"])


def _bootstrap_ratio(a, b, n_boot=2000, level=0.90, seed=0):
    """Percentile interval of ``sum(a[rows]) / sum(b[rows])`` over bootstrap resamples of
    the rows (``a``, ``b``: per-row errors of two methods on the same rows)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(n_boot, len(a)))
    r = a[idx].sum(axis=1) / np.maximum(b[idx].sum(axis=1), 1e-300)
    return tuple(np.quantile(r, [(1 - level) / 2, (1 + level) / 2]))


def _ratio(ours, theirs, tiny=1e-12):
    """ours / theirs, or "exact" when both are exact (round-off)."""
    if ours <= tiny and theirs <= tiny:
        return "exact"
    return f"{ours / theirs:.3f}"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="artifacts/bench_shapley")
    ap.add_argument("--skip-shapiq", action="store_true",
                    help="use the shapiq results already in DIR, run nothing in shapiq's venv")
    ap.add_argument("--shapiq-python", default=os.environ.get("SHAPIQ_PYTHON"),
                    help="Python of a benchmark-only venv with shapiq 1.8 (Python 3.12); "
                         "default: $SHAPIQ_PYTHON")
    ap.add_argument("--games", default=",".join(GAMES),
                    help="comma-separated games (default: the issue's five); the held-out "
                         f"games {', '.join(HELD_OUT)} run when named")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--skip-shap", action="store_true",
                    help="do not run shap's PermutationExplainer and KernelExplainer")
    ap.add_argument("--shap-seeds", type=int, default=8,
                    help="seeds of shap's estimators (default 8: their error is the "
                         "denominator of the ratios)")
    ap.add_argument("--cover-seeds", type=int, default=32,
                    help="seeds of the coverage of frontier's intervals (default 32: with 8, "
                         "a cell of 100-600 values reads its coverage to about +-2 %%, "
                         "and the values of a row are not independent)")
    ap.add_argument("--adult-rows", type=int, default=None,
                    help="explained rows of the Adult games (default 12, quick 6; other "
                         "values get their own folder, e.g. full_rows48)")
    ap.add_argument("--german-rows", type=int, default=None,
                    help="explained rows of the German game (default 4, quick 2; other "
                         "values get their own folder, e.g. full_german12)")
    args = ap.parse_args(argv)
    out = Path(args.out) / (("quick" if args.quick else "full")
                            + (f"_rows{args.adult_rows}" if args.adult_rows else "")
                            + (f"_german{args.german_rows}" if args.german_rows else ""))
    games = args.games.split(",")
    build(out, args.quick, args.adult_rows, games, args.german_rows)
    if args.build_only:
        return 0
    seeds = [0, 1] if args.quick else [0, 1, 2, 3]
    if not args.skip_shapiq and not args.shapiq_python:
        ap.error("pass --shapiq-python (or set SHAPIQ_PYTHON), or --skip-shapiq")
    sq = (load_shapiq(out, games) if args.skip_shapiq else
          run_shapiq(out, args.shapiq_python, seeds, args.quick, games))
    ours = run_ours(out, seeds, games, cover_seeds=list(range(args.cover_seeds)))
    theirs = {} if args.skip_shap else run_shap(out, list(range(args.shap_seeds)), games)
    print(f"\n{'game':18s} {'n_ev':>4s} {'kernel':>9s} {'perm':>9s} {'frontier':>9s} "
          f"{'sq best':>9s} {'(which)':>22s} {'ratio':>7s} {'cover':>9s} {'ms/row':>7s} "
          f"{'sq ms/row':>9s} {'shap perm':>9s} {'ratio':>6s} {'shap kern':>9s}")
    for name in games:
        n_players = _load_game(out, name)[0].n_players
        sqm = shapiq_mae(out, sq, name) if sq else {}
        for b in BUDGETS:
            k, p, fr = (ours[(name, m, b)] for m in ("kernel", "permutation", "frontier"))
            cand = {m: v for m, v in sqm.items() if v.get("budget") == b or
                    m.endswith(f"@{b}")}
            if cand:
                best = min(cand, key=lambda m: cand[m]["mae"])
                bm, bt = cand[best]["mae"], cand[best]["sec_per_row"] * 1e3
                bname = best.split("@")[0]
            else:
                bm, bt, bname = float("nan"), float("nan"), "-"
            ours_best = _ours_best(ours, name, b)["mae"]
            c = fr["cover"]
            cov = f"{c[0] / c[1]:.3f}" if c[1] else ("no se" if b <= 16 else "-")
            sp = theirs.get((name, "shap_permutation", b), {}).get("mae", float("nan"))
            sk = theirs.get((name, "shap_kernel", b), {}).get("mae", float("nan"))
            print(f"{name:18s} {b:4d} {k['mae']:9.2e} {p['mae']:9.2e} {fr['mae']:9.2e} "
                  f"{bm:9.2e} {bname:>22s} {_ratio(ours_best, bm):>7s} {cov:>9s} "
                  f"{fr['sec_per_row'] * 1e3:7.2f} {bt:9.1f} {sp:9.2e} "
                  f"{_ratio(ours_best, sp):>6s} {sk:9.2e}")
            if fr["evals_per_row"] > b * n_players + 2:
                print(f"  !! frontier used {fr['evals_per_row']} evaluations per row")
    if theirs:
        print("\nours (best method) / shap permutation with a 90 % interval from 2,000 "
              "bootstrap resamples of the explained rows (paired: the same rows on both "
              "sides; the rows are few, so the ratio moves with which rows were drawn)")
        for name in games:
            for b in (2, 4, 8):
                sp = theirs.get((name, "shap_permutation", b))
                if sp is None:
                    continue
                mine = _ours_best(ours, name, b)
                lo, hi = _bootstrap_ratio(mine["row_mae"], sp["row_mae"])
                print(f"  {name:16s} n_evals={b:2d}  {_ratio(mine['mae'], sp['mae']):>6s}"
                      f"  [{lo:.3f}, {hi:.3f}]  ({len(sp['row_mae'])} rows)")
    if "dividend32" in games:
        print("\ndividend32: the frontier's fit against the same fit told the support of the "
              "order-3 part (an oracle; same designs and values, 4 seeds)")
        for b, (e_fit, e_oracle) in support_oracle(out).items():
            print(f"  n_evals={b:3d}  frontier fit {e_fit:.3e}  support oracle {e_oracle:.3e}")
        print("\ndividend32: the frontier with its triples' relevance pooled with their pairs' "
              "(the default in the sparse-recovery regime) against without (ard_pool='none'), "
              "MAE over 4 seeds")
        for b, (e_pool, e_alone) in ard_pool_ablation(out).items():
            print(f"  n_evals={b:3d}  pooled {e_pool:.3e}  alone {e_alone:.3e}  "
                  f"(ratio {_ratio(e_pool, e_alone)})")
    for name in ("adult_xgb_ref", "adult_mlp_ref"):
        if name not in games:
            continue
        print(f"\n{name}, n_evals=2: the frontier against the same designs and values "
              "fitted with the true order-3 spectrum (8 seeds)")
        sp = theirs.get((name, "shap_permutation", 2), {}).get("mae", float("nan"))
        for label, mae in spectrum_oracle(out, name).items():
            print(f"  {label:28s} MAE {mae:.3e}   / shap permutation {_ratio(mae, sp)}")
    mean_games = [g for g in ("adult_xgb_bg16", "german_xgb_bg16") if g in games]
    if mean_games:
        print("\nmean games: the components' budget by their interactions against by their "
              "size alone (pool_by), MAE over 4 seeds; 95 % coverage of the components' "
              "standard-error rule (se_mode auto = pooled there, against max), 8 seeds")
        for name, b, e_int, e_size, c_auto, c_max in component_ablation(out, mean_games):
            cov = "" if c_auto is None else f"  coverage auto {c_auto:.3f}  max {c_max:.3f}"
            print(f"  {name:16s} n_evals={b:3d}  interactions {e_int:.3e}  size {e_size:.3e}"
                  f"  (ratio {_ratio(e_int, e_size)}){cov}")
        print("\nmean games: the frontier against the same designs and values with each "
              "component's order-3 prior told (4 seeds; MAE, and over the frontier's)")
        for name in mean_games:
            for b, errs in component_spectrum_oracle(out, name).items():
                print(f"  {name:16s} n_evals={b}  " + "  ".join(
                    f"{k} {v:.3e} ({_ratio(v, errs['frontier'])})" for k, v in errs.items()))
    print("\nthe permutation and kernel estimators' 95 % intervals (estimate_shapley: the "
          "units' standard error Student-t widened by U - 1) against the units' normal "
          "interval, 16 seeds")
    for name in [g for g in ("adult_xgb_ref", "adult_mlp_ref", "dividend32") if g in games]:
        for (algorithm, b), (U, c_t, c_z, tot) in engine_coverage(out, name).items():
            print(f"  {name:16s} {algorithm:11s} n_evals={b:3d}  units {U:3d}  Student-t "
                  f"{c_t:.3f}  normal {c_z:.3f}  ({tot} values)")
    shared = run_shared(out, seeds, games, cover_seeds=list(range(min(args.cover_seeds, 16))))
    print("\nfrontier_shared (one design per number of active players, shared by the rows; "
          "flat order-3 prior): MAE over shapiq's best, shap's permutation and the "
          "frontier; time per row without the model (cold: the seed's first call computes "
          "the designs' maps; warm: cached) against shapiq's best; 95 % coverage (16 seeds)")
    print(f"{'game':18s} {'n_ev':>4s} {'MAE':>9s} {'/ sq best':>9s} {'/ shap perm':>11s} "
          f"{'/ frontier':>10s} {'cold ms':>8s} {'warm ms':>8s} {'sq ms':>7s} {'cover':>6s}")
    for name in games:
        sqm = shapiq_mae(out, sq, name) if sq else {}
        for b in BUDGETS:
            r = shared[(name, b)]
            cand = {m: v for m, v in sqm.items() if v.get("budget") == b or
                    m.endswith(f"@{b}")}
            bm = min((v["mae"] for v in cand.values()), default=float("nan"))
            bt = min((v["sec_per_row"] * 1e3 for m, v in cand.items()
                      if v["mae"] == bm), default=float("nan"))
            sp = theirs.get((name, "shap_permutation", b), {}).get("mae", float("nan"))
            c = r["cover"]
            print(f"{name:18s} {b:4d} {r['mae']:9.2e} {_ratio(r['mae'], bm):>9s} "
                  f"{_ratio(r['mae'], sp):>11s} "
                  f"{_ratio(r['mae'], ours[(name, 'frontier', b)]['mae']):>10s} "
                  f"{r['cold_ms']:8.3f} {r['warm_ms']:8.3f} {bt:7.1f} "
                  f"{(f'{c[0] / c[1]:.3f}' if c[1] else '-'):>6s}")
    if "adult_mlp_ref" in games:
        print("\nadult_mlp_ref: time outside the model against the model's own time (the "
              "torch MLP on the rows the frontier evaluated, one call per game)")
        print(f"{'n_ev':>4s} {'evals/row':>9s} {'model ms/row':>12s} {'ours ms/row':>11s} "
              f"{'ours/model':>10s}")
        print(f"{'':36s} frontier_shared: {'evals/row':>9s} {'model ms/row':>12s} "
              f"{'warm ms/row':>11s} {'/model':>7s}")
        n_mlp = _load_game(out, "adult_mlp_ref")[0].n_rows
        # one model, trained once, timed on the rows of both estimators
        evals = ([ours[("adult_mlp_ref", "frontier", b)]["evals_per_row"] for b in BUDGETS]
                 + [shared[("adult_mlp_ref", b)]["evals_per_row"] for b in BUDGETS])
        model = mlp_model_ms(evals, n_mlp)
        for b, model_ms, shared_ms in zip(BUDGETS, model, model[len(BUDGETS):]):
            fr = ours[("adult_mlp_ref", "frontier", b)]
            ms = fr["sec_per_row"] * 1e3
            sh = shared[("adult_mlp_ref", b)]
            print(f"{b:4d} {fr['evals_per_row']:9.1f} {model_ms:12.3f} {ms:11.3f} "
                  f"{ms / model_ms:10.2f}   {sh['evals_per_row']:9.1f} "
                  f"{shared_ms:12.3f} {sh['warm_ms']:11.3f} "
                  f"{sh['warm_ms'] / shared_ms:7.2f}")
        # batches of TILE x the table's rows (the rows repeated: the time of a row does
        # not depend on its values): the call's fixed costs spread as in a user's call of
        # a hundred rows and of a thousand; the model timed on that many rows' evaluations
        for tile in TILES:
            big = shared_warm_tiled(out, "adult_mlp_ref", tile)
            model = mlp_model_ms([sh["evals_per_row"] for sh in big.values()], n_mlp * tile)
            print(f"\nadult_mlp_ref, its {n_mlp} rows repeated {tile} times ({n_mlp * tile} "
                  "rows in one call): frontier_shared's warm time per row on the table game "
                  "(median of 5 calls; its lookup stands in for the model and for building "
                  "its input rows: see the end-to-end table) against the model's")
            print(f"{'n_ev':>4s} {'evals/row':>9s} {'model ms/row':>12s} "
                  f"{'warm ms/row':>11s} {'/model':>7s}")
            for (b, sh), model_ms in zip(big.items(), model):
                print(f"{b:4d} {sh['evals_per_row']:9.1f} {model_ms:12.4f} "
                      f"{sh['warm_ms']:11.4f} {sh['warm_ms'] / model_ms:7.2f}")
        # end to end, as a user calls it: the game an ImputationGame of the MLP itself, so
        # that building the model's input rows counts as outside the model (the tables
        # above stand a table lookup in for the model and its inputs)
        for tile in TILES:
            e2e = shared_end_to_end(out, "adult_mlp_ref", tile)
            print(f"\nadult_mlp_ref end to end, {n_mlp * tile} rows in one call: "
                  "estimate_shapley(ImputationGame(MLP), 'frontier_shared', with_std=False), "
                  "warm; the model's own time measured inside its calls (median of 7 calls)")
            print(f"{'n_ev':>4s} {'evals/row':>9s} {'model ms/row':>12s} "
                  f"{'outside ms/row':>14s} {'/model':>7s}")
            for b, r in e2e.items():
                print(f"{b:4d} {r['evals_per_row']:9.1f} {r['model_ms']:12.4f} "
                      f"{r['outside_ms']:14.4f} {r['outside_ms'] / r['model_ms']:7.2f}")
    return 0


# the tiled calls' repetitions of the MLP table's rows (120 and 1,200 rows in the full
# mode's calls)
TILES = (10, 100)


def _warm_calls(game, run, repeats, inside=None):
    """``{n_evals: (evals per row, call times (repeats,), times inside the model or
    None)}`` of ``run(game, n_evals)`` warm: a first call (its designs cached, its
    evaluations counted), then ``repeats`` timed calls; ``inside``: a one-element list the
    model adds its own time to."""
    res = {}
    for b in BUDGETS:
        game.n_evaluations = 0
        run(game, b)
        evals = game.n_evaluations / game.n_rows
        tot, mod = [], []
        for _ in range(repeats):
            if inside is not None:
                inside[0] = 0.0
            t0 = time.perf_counter()
            run(game, b)
            tot.append(time.perf_counter() - t0)
            mod.append(None if inside is None else inside[0])
        res[b] = (evals, np.array(tot), None if inside is None else np.array(mod))
    return res


def shared_warm_tiled(out, name, reps, repeats=5, design_seed=0):
    """``{n_evals: {"warm_ms", "evals_per_row"}}`` of ``frontier_shared`` on the table
    game ``name`` with its rows repeated ``reps`` times, in one call: the median warm
    time per row (its designs cached by a first call) over ``repeats`` calls."""
    from sklearn_xai.shapley._estimators import frontier_shared_shapley
    z = np.load(out / f"{name}.npz")
    game = TableGame(np.tile(z["tables"], (reps, 1)), np.tile(z["active"], (reps, 1)))
    calls = _warm_calls(game, lambda g, b: frontier_shared_shapley(g, b, design_seed=design_seed),
                        repeats)
    return {b: {"warm_ms": float(np.median(tot)) / game.n_rows * 1e3, "evals_per_row": evals}
            for b, (evals, tot, _) in calls.items()}


def shared_end_to_end(out, name, reps, repeats=7, design_seed=0):
    """``{n_evals: {"model_ms", "outside_ms", "evals_per_row"}}``: ``frontier_shared``
    through :func:`estimate_shapley` on an :class:`ImputationGame` of the Adult MLP
    (:func:`_adult_mlp`) with the table ``name``'s rows repeated ``reps`` times and its
    reference, warm (its designs cached by a first call): per explained row, the median
    over ``repeats`` calls of the time inside the model's calls and of the rest."""
    from sklearn_xai.shapley import ImputationGame, estimate_shapley
    z = np.load(out / f"{name}.npz")
    _, f = _adult_mlp()
    inside = [0.0]

    def model(Z):
        t0 = time.perf_counter()
        y = f(Z)
        inside[0] += time.perf_counter() - t0
        return y

    game = ImputationGame(model, np.tile(z["rows"], (reps, 1)), z["references"])
    calls = _warm_calls(game, lambda g, b: estimate_shapley(
        g, "frontier_shared", b, design_seed=design_seed, with_std=False), repeats, inside)
    return {b: {"model_ms": float(np.median(mod)) / game.n_rows * 1e3,
                "outside_ms": float(np.median(tot - mod)) / game.n_rows * 1e3,
                "evals_per_row": evals}
            for b, (evals, tot, mod) in calls.items()}


def component_ablation(out, games, seeds=(0, 1, 2, 3), cover_seeds=tuple(range(8))):
    """Per mean game and budget: the frontier's MAE with the components' budget by their
    interactions and by their size alone, and (budgets up to 16) the coverage of the
    components' standard-error rule (``se_mode="auto"``) against the max rule."""
    from sklearn_xai.shapley._frontier import frontier_shapley
    rows = []
    for name in games:
        game, truth = load_game(out, name)

        def mae(b, game=game, truth=truth, **cfg):
            return _frontier_mae(game, truth, b, seeds, **cfg)

        def coverage(b, game=game, truth=truth, **cfg):
            hit, tot = np.sum([_cover_counts(frontier_shapley, game, truth, b, s, **cfg)
                               for s in cover_seeds], axis=0)
            return hit / tot if tot else float("nan")

        for b in BUDGETS:
            cov = (coverage(b), coverage(b, se_mode="max")) if b <= 16 else (None, None)
            rows.append((name, b, mae(b), mae(b, pool_by="size"), *cov))
    return rows


def _frontier_row(game, r, players, n_pairs, rng):
    """Row ``r`` of ``game`` as the frontier samples it (its design over ``players``
    from ``rng``, the values of the pairs and of both ends): the frontier's estimate of
    the active players (Pa, O), and ``(X, y, W, yN)`` for other fits of the same pairs
    (:func:`sklearn_xai.shapley._frontier._fit_row`)."""
    from sklearn_xai.shapley import _frontier as F
    cfg, P = F.DEFAULTS, game.n_players
    extra = F._design(players.size, n_pairs, rng, cfg["alloc"], cfg["ht"], unit=cfg["folds"])
    S, W = extra[0], extra[1]
    v = game.value(F._pair_masks(S, players, P), rows=slice(r, r + 1))[0]
    ends = game.value(np.array([np.zeros(P, bool), np.ones(P, bool)]), rows=slice(r, r + 1))[0]
    _, est, _, _ = F._solve_fit_row((players, *extra), v, ends[0], ends[1], cfg, True, False)
    return est, (np.where(S, 1.0, -1.0), (v[0::2] - v[1::2]) / 2, W, (ends[1] - ends[0]) / 2)


def support_oracle(out, budgets=(4, 8, 16), seeds=(0, 1, 2, 3)):
    """dividend32: the frontier's fit against the same fit told which order-3 Walsh
    coefficients of the odd part are non-zero (an oracle prior: equal variance on the
    true support, none elsewhere), on the frontier's own designs and values. Measures how
    much of the error is the surrogate not knowing the support (learnable structure) and
    how much the budget. Returns {n_evals: (MAE frontier fit, MAE oracle fit)}."""
    from itertools import combinations

    from sklearn_xai.shapley import _frontier as F
    z = np.load(out / "dividend32.npz")
    P = int(z["n_players"])
    sets = [tuple(p for p in range(P) if (int(s) >> p) & 1) for s in z["sets"]]
    game, truth = _load_game(out, "dividend32")
    T = F._triples(P)
    index = {tuple(t): i for i, t in enumerate(T.tolist())}
    support = np.zeros(T.shape[0], bool)
    for D in sets:                    # chi_U has a non-zero coefficient iff U lies in a D
        for U in combinations(D, 3):
            support[index[U]] = True
    res = {}
    for b in budgets:
        err_fit, err_oracle = [], []
        for seed in seeds:
            for r in range(game.n_rows):
                est, (X, y, W, yN) = _frontier_row(game, r, np.arange(P), b * P // 2,
                                                   np.random.default_rng([seed, r]))
                err_fit.append(np.abs(est[:, 0] - truth[r]).mean())
                # the same kriging told the support: equal prior variance on the true
                # triples (the same total as the fit's), none elsewhere
                oracle = F._fit_row(X, y, W, yN, (3,), F.DEFAULTS["ratio"], primal=False,
                                    prior=np.where(support, T.shape[0] / support.sum(), 0.0))
                err_oracle.append(np.abs(F._project(oracle, 2 * yN)[:, 0] - truth[r]).mean())
        res[b] = (float(np.mean(err_fit)), float(np.mean(err_oracle)))
    return res


def ard_pool_ablation(out, budgets=(16, 32, 64), seeds=(0, 1, 2, 3)):
    """dividend32: the frontier's MAE with ARD's pooled relevance (``ard_pool="pairs"``,
    the default; it acts from ``16 Pa`` pairs, so at 16 the two are equal) and without.
    Returns {n_evals: (MAE pooled, MAE alone)}."""
    game, truth = _load_game(out, "dividend32")
    return {b: (_frontier_mae(game, truth, b, seeds),
                _frontier_mae(game, truth, b, seeds, ard_pool="none")) for b in budgets}


def spectrum_oracle(out, name, n_evals=2, seeds=tuple(range(8))):
    """A one-reference game at a small budget: the frontier against the same designs and
    values fitted by the order-3 kriging told each row's true order-3 odd Walsh
    coefficients (prior variance proportional to their squares: a per-row oracle), and
    told the mean of the other rows' squares instead (a model-level prior, what a fit on
    other rows could learn at best). Returns {label: MAE over all rows and players}; the
    rows not sampled (exact or dummy) count with the frontier's own error (round-off)."""
    from sklearn_xai.shapley import _frontier as F
    from sklearn_xai.shapley._estimators import all_masks

    game, truth = _load_game(out, name)
    n, P = truth.shape
    active = game.active_players()
    cfg = F.DEFAULTS
    T = F._triples(P)
    index = {tuple(t): i for i, t in enumerate(T.tolist())}

    def odd3(r):          # the row's order-3 odd Walsh coefficients over all P players
        M = all_masks(P).astype(bool)
        bits = np.int64(1) << np.arange(P, dtype=np.int64)
        y = (game.tables[r, M @ bits] - game.tables[r, ~M @ bits]) / 2
        X = np.where(M, 1.0, -1.0)
        return (X[:, T[:, 0]] * X[:, T[:, 1]] * X[:, T[:, 2]]).T @ y / M.shape[0]

    w2 = np.array([odd3(r) for r in range(n)]) ** 2                  # (n, C(P, 3))
    err = {"frontier": [], "per-row spectrum oracle": [], "other rows' mean spectrum": []}
    for seed in seeds:
        for r in range(n):
            players = np.flatnonzero(active[r])
            Pa = players.size
            if 2**Pa - 2 <= n_evals * P or Pa <= 1:
                for k in err:
                    err[k].append(0.0)
                continue
            est, (X, y, W, yN) = _frontier_row(game, r, players, n_evals * P // 2,
                                               np.random.default_rng([seed, r]))
            sub = np.array([index[tuple(players[t])] for t in F._triples(Pa).tolist()])
            priors = {"per-row spectrum oracle": w2[r, sub],
                      "other rows' mean spectrum": np.delete(w2, r, axis=0).mean(axis=0)[sub]}
            phi = np.zeros(P)
            phi[players] = est[:, 0]
            err["frontier"].append(np.abs(phi - truth[r]).sum() / P)
            for k, prior in priors.items():
                fit = F._fit_row(X, y, W, yN, (3,), cfg["ratio"], primal=False,
                                 prior=prior / max(prior.mean(), 1e-300))
                phi = np.zeros(P)
                phi[players] = F._project(fit, 2 * yN)[:, 0]
                err[k].append(np.abs(phi - truth[r]).sum() / P)
    return {k: float(np.mean(v)) for k, v in err.items()}


def engine_coverage(out, name, budgets=(4, 8, 16), seeds=tuple(range(16))):
    """Coverage of the 95 % intervals of the permutation and kernel estimators through
    ``estimate_shapley`` (their units' standard error Student-t widened by ``U - 1``
    degrees of freedom) against the normal interval of the same units. Returns
    {(algorithm, n_evals): (units, coverage t, coverage normal, values)}."""
    from sklearn_xai.shapley import estimate_shapley

    game, truth = load_game(out, name)
    res = {}
    for algorithm in ("permutation", "kernel"):
        for b in budgets:
            hit_t = hit_z = tot = 0
            for s in seeds:
                est = estimate_shapley(game, algorithm, b, _row_gens(s, game.n_rows))
                if est.std is None:
                    continue
                err = np.abs(est.values[:, :, 0] - truth)
                ok = est.std[:, :, 0] > 1e-12
                hit_t += int((err <= 1.96 * est.std[:, :, 0])[ok].sum())
                hit_z += int((err <= 1.96 * unit_std(est.units)[:, :, 0])[ok].sum())
                tot += int(ok.sum())
            if tot:
                res[(algorithm, b)] = (est.units.shape[1], hit_t / tot, hit_z / tot, tot)
    return res


def _odd3_spectra(tables, P):
    """The order-3 odd Walsh coefficients (n, C(P, 3)) of each full table (n, 2**P) (bit
    ``p`` of a coalition's index is player ``p``), triples in ``_triples(P)`` order, by
    one fast Walsh-Hadamard transform of the odd part per table."""
    from sklearn_xai.shapley._frontier import _triples
    full = 2**P - 1
    codes = (np.int64(1) << _triples(P)).sum(axis=1)
    out = np.empty((tables.shape[0], codes.size))
    for r, t in enumerate(tables):
        a = (t - t[full ^ np.arange(2**P)]) / 2.0       # the odd part, (v(S) - v(~S)) / 2
        h = 1
        while h < a.size:
            a = a.reshape(-1, 2, h)
            a = np.stack((a[:, 0] + a[:, 1], a[:, 0] - a[:, 1]), axis=1).reshape(-1)
            h *= 2
        # the transform gives (-1)**|S & T|; chi_T(S) = prod_{i in T} (+1 in S, -1 out)
        # = (-1)**(|T| - |S & T|) = -(-1)**|S & T| for |T| = 3
        out[r] = -a[codes] / a.size
    return out


def component_spectrum_oracle(out, name, budgets=(2, 4), seeds=(0, 1, 2, 3)):
    """A mean game: the frontier against the same designs and values with each
    component's order-3 prior told (scoped patches of the frontier's prior; the budgets,
    designs and fits are the frontier's own): its own true order-3 odd spectrum (a
    per-component oracle), and the mean of the row's other components' spectra, each
    normalized to sum 1 (what pooling the components of a row could learn at best).
    Returns {n_evals: {label: MAE}}."""
    from unittest import mock

    from sklearn_xai.shapley import _frontier as F

    game, truth = load_game(out, name)
    comp, K = game.imputation_components()
    P = game.n_players
    w2 = _odd3_spectra(comp.tables, P) ** 2                          # (n K, C(P, 3))
    w2n = w2 / np.maximum(w2.sum(axis=1, keepdims=True), 1e-300)
    index = {tuple(t): i for i, t in enumerate(F._triples(P).tolist())}
    state = {"label": None, "todo": [], "comp": None}
    solve_rows, solve_fit_row, pair_prior = F._solve_rows, F._solve_fit_row, F._pair_prior

    def told_solve_rows(plans, *args, **kw):
        # _solve_rows solves the per-row designs in the order of their plans
        state["todo"] = [int(p.rows[0]) for p in plans if p.kind == "fit"]
        return solve_rows(plans, *args, **kw)

    def told_solve_fit_row(*args, **kw):
        state["comp"] = state["todo"].pop(0)
        return solve_fit_row(*args, **kw)

    def told_prior(mag, activity, floor):
        c, label = state["comp"], state["label"]
        players = np.flatnonzero(comp.active_players()[c])
        sub = [index[tuple(players[t])] for t in F._triples(players.size).tolist()]
        if label == "own spectrum (oracle)":
            tau = w2[c, sub]
        else:
            others = [k for k in range(c - c % K, c - c % K + K) if k != c]
            tau = w2n[others].mean(axis=0)[sub]
        tau = tau + 1e-6 * tau.max()
        return F._TripleVariances(tau / tau.mean())

    res = {}
    for b in budgets:
        res[b] = {}
        for label in ("frontier", "own spectrum (oracle)", "row's other components"):
            state["label"] = label
            with mock.patch.multiple(F, _solve_rows=told_solve_rows,
                                     _solve_fit_row=told_solve_fit_row,
                                     **({} if label == "frontier" else
                                        {"_pair_prior": told_prior})):
                res[b][label] = _frontier_mae(game, truth, b, seeds)
    assert F._pair_prior is pair_prior
    return res


@lru_cache(maxsize=1)
def _adult_mlp():
    """The Adult rows and the MLP of :func:`build` (same seed), trained once per run (each
    of the run's :func:`mlp_model_ms` calls times it)."""
    A, y, _ = _adult()
    return A, _mlp(A, y)


def mlp_model_ms(evals_per_row, n_rows, repeats=5):
    """The Adult MLP's own time per explained row (ms) for each entry of
    ``evals_per_row`` (coalition evaluations per row, e.g. the frontier's at each
    budget): the model (rebuilt as in :func:`build`, same seed, once) on as many rows
    as that many evaluations for the game's ``n_rows`` rows, in one call (as
    ``ImputationGame`` calls it); the median of ``repeats`` (the statistic of the
    estimator's own time it is compared with), each row count timed once. The
    model's time does not depend on the values, so the rows are training rows."""
    A, f = _adult_mlp()
    rng = np.random.default_rng(0)
    counts = [max(int(round(e * n_rows)), 1) for e in evals_per_row]
    ms = {}
    for m in dict.fromkeys(counts):
        Z = A[rng.choice(len(A), m)]
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            f(Z)
            times.append(time.perf_counter() - t0)
        ms[m] = float(np.median(times)) * 1e3 / n_rows
    return [ms[m] for m in counts]


if __name__ == "__main__":
    sys.exit(main())
