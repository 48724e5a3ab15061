"""Benchmark of the knockoff samplers, KnockoffSHAP and KnockoffSAGE.

1. Gaussian MVR knockoffs, 10,000 x 20 rows (AR(1) correlation 0.5), 10 knockoffs per
   row: fit (covariance + s) and sampling time; knockpy on the same data when it can be
   imported here or when ``--knockpy-python`` names an interpreter that has it.
2. The German Credit attack (Slack et al. detector: 100 trees, 5e4 k-means(10)
   hybrids): share of test rows with Gender / LoanRate ranked first (strictly largest
   |phi|) under marginal and knockoff imputation, and KnockoffSHAP rows/s.
3. The SAGE simulation (4 equicorrelated Gaussians, adversary x1 on real rows, x2
   otherwise): share of replicates with x1 ranked first, knockoff vs marginal SAGE.
4. Error bars (``--only errors``): 8 equicorrelated Gaussians, a gradient-boosted model
   with interactions; KnockoffSHAP (antithetic permutations) at fixed budgets and with
   ``n_evals="auto"`` against the values with unlimited knockoffs and coalitions (exact
   enumeration with 1,500 knockoffs per row): error, share of values within 1.96 standard
   errors, and the budget ``"auto"`` chose per row; KnockoffSAGE's permutation error bars
   against its exact algorithm on the same knockoffs.
5. SAGE by the frontier (``--only sage-frontier``): Adult (12 players, integer codes), a
   HistGradientBoostingClassifier, 16 background rows, marginal imputation; the exact
   SAGE values of the explained rows (all 4,096 coalitions) against
   ``KnockoffSAGE(algorithm="frontier", n_evals=b)`` and the permutation rounds at equal
   model evaluations (``b P / (P - 1)`` rounds, rounded to whole antithetic pairs), and
   the default (permutation rounds until ``tol=0.025``): error, coverage of the 95 %
   intervals, time per call (model included).
6. Defaults (``--only default``): KnockoffSHAP at its default settings on German credit
   (20 players, a HistGradientBoostingClassifier, 10 Gaussian knockoffs per row), the
   frontier default against the previous default (KernelSHAP at ``2 + ceil(2048 / P)``):
   rows/s and error against the same knockoff game's values from antithetic permutations
   at ``n_evals=1024``; and ``algorithm="frontier_shared"`` at the default budget.

Run ``python benchmarks/bench_knockoff.py --quick`` (a few minutes) or without
``--quick`` for the full run (100 SAGE replicates per rho; about an hour on 2 cores).
"""

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sklearn
from sklearn.frozen import FrozenEstimator

from sklearn_xai.knockoffs import GaussianKnockoffs
from sklearn_xai.shapley import KnockoffSHAP
from tests._attack import (
    OODAdversaryClassifier,
    german_attack_data,
    sage_simulation,
)

KNOCKPY_SNIPPET = r"""
import json, sys, time
import numpy as np
import knockpy
from knockpy import knockoffs, smatrix, utilities
X = np.load(sys.argv[1])
t0 = time.perf_counter()
Sigma, _ = utilities.estimate_covariance(X, tol=1e-2)
mu = X.mean(axis=0)
S = smatrix.compute_smatrix(Sigma, method="mvr")
t1 = time.perf_counter()
invSigma = np.linalg.inv(Sigma)
ko = knockoffs.produce_MX_gaussian_knockoffs(X=X, mu=mu, invSigma=invSigma, S=S,
                                             sample_tol=1e-5, copies=10)
t2 = time.perf_counter()
print(json.dumps({"version": knockpy.__version__, "fit_s": t1 - t0, "sample_s": t2 - t1,
                  "shape": list(np.shape(ko))}))
"""


def ar1_data(n, p, rho, seed):
    rng = np.random.default_rng(seed)
    idx = np.arange(p)
    cov = rho ** np.abs(idx[:, None] - idx[None, :])
    return rng.multivariate_normal(np.zeros(p), cov, size=n)


def bench_gaussian(knockpy_python, repeats):
    X = ar1_data(10_000, 20, 0.5, 0)
    fit_t, sample_t = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        kn = GaussianKnockoffs(method="mvr").fit(X)
        t1 = time.perf_counter()
        ko = kn.sample(X, n_knockoffs=10, random_state=0)
        t2 = time.perf_counter()
        fit_t.append(t1 - t0)
        sample_t.append(t2 - t1)
    ours = {"fit_s": min(fit_t), "sample_s": min(sample_t), "shape": list(ko.shape)}
    other = None
    python = knockpy_python
    if python is None:
        try:
            import knockpy  # noqa: F401

            python = sys.executable
        except ImportError:
            python = None
    if python is not None:
        path = Path("/tmp/bench_knockoff_X.npy")
        np.save(path, X)
        runs = []
        for _ in range(repeats):
            out = subprocess.run([python, "-c", KNOCKPY_SNIPPET, str(path)],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                runs = None
                other = {"error": out.stderr.strip().splitlines()[-1:]}
                break
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        if runs:
            other = {"version": runs[0]["version"],
                     "fit_s": min(r["fit_s"] for r in runs),
                     "sample_s": min(r["sample_s"] for r in runs),
                     "shape": runs[0]["shape"]}
    return {"ours": ours, "knockpy": other}


def first_share(values, j):
    a = np.abs(values)
    return float(np.mean(a[:, j] > np.delete(a, j, axis=1).max(axis=1)))


def bench_german(ks, n_rows, n_evals):
    Xtr, Xte, _, _, names, _ = german_attack_data()
    g, lr = names.index("Gender"), names.index("LoanRateAsPercentOfIncome")
    t0 = time.perf_counter()
    adv = OODAdversaryClassifier(g, lr, background=10, random_state=0).fit(Xtr)
    out = {"detector_fit_s": time.perf_counter() - t0, "fidelity": adv.fidelity(Xte),
           "n_rows": n_rows, "n_evals": n_evals, "rows": []}
    Xe = Xte[:n_rows]
    common = {"algorithm": "permutation", "n_evals": n_evals, "random_state": 0}
    t0 = time.perf_counter()
    mg = KnockoffSHAP(FrozenEstimator(adv), imputation="marginal", background=adv.background_,
                      **common).fit(Xtr).explain(Xe)
    dt = time.perf_counter() - t0
    out["rows"].append({"imputation": "marginal (k-means 10)", "K": 10,
                        "gender_first": first_share(mg.values, g),
                        "loanrate_first": first_share(mg.values, lr),
                        "rows_per_s": n_rows / dt})
    for K in ks:
        ex = KnockoffSHAP(FrozenEstimator(adv), sampler=GaussianKnockoffs(support="observed"),
                          n_knockoffs=K, **common).fit(Xtr)
        ko = ex.sampler_.sample(Xte, K, random_state=0).reshape(-1, Xte.shape[1])
        t0 = time.perf_counter()
        att = ex.explain(Xe)
        dt = time.perf_counter() - t0
        out["rows"].append({"imputation": "knockoff (Gaussian MVR, observed support)", "K": K,
                            "gender_first": first_share(att.values, g),
                            "loanrate_first": first_share(att.values, lr),
                            "knockoff_fidelity": adv.fidelity(ko),
                            "rows_per_s": n_rows / dt})
    # the default algorithm (KernelSHAP, n_evals = 2 + ceil(2048 / P) coalitions per player
    # and row, about 2P + 2048 per row) for the throughput figure
    ex = KnockoffSHAP(FrozenEstimator(adv), sampler=GaussianKnockoffs(support="observed"),
                      random_state=0).fit(Xtr)
    m = min(n_rows, 10)
    t0 = time.perf_counter()
    ex.explain(Xe[:m])
    out["kernel_default_rows_per_s"] = m / (time.perf_counter() - t0)
    out["kernel_default_n_evals"] = ex.n_evals_
    return out


def bench_default(n_rows, ref_n_evals=1024):
    """KnockoffSHAP at its default settings on German credit (20 players as integer codes,
    a HistGradientBoostingClassifier, Gaussian knockoffs, 10 per row): the frontier default
    (``algorithm="auto"``, ``n_evals=16``) against the previous default (KernelSHAP at
    ``n_evals = 2 + ceil(2048 / P)``), rows/s and mean absolute error against the values of
    the same knockoff game (the explainer's own knockoffs) from antithetic permutations at
    ``ref_n_evals`` (two independent runs: their mean is the reference, half their mean
    absolute difference its own error); the frontier at half the default budget, and the
    frontier with shared designs."""
    from bench_shapley import _german  # German credit's integer codes, as bench_shapley's
    from sklearn.ensemble import HistGradientBoostingClassifier

    from sklearn_xai._random import row_keys, stream_seeds
    from sklearn_xai._utils import draw_base_seed, keyed_generators
    from sklearn_xai.shapley import ImputationGame, permutation_shapley
    from sklearn_xai.shapley._knockoff import _KNOCKOFF_STREAM, _draw_knockoffs

    A, y, _ = _german()
    model = HistGradientBoostingClassifier(max_iter=100, random_state=0).fit(A, y)
    rows = A[np.random.default_rng(0).choice(len(A), n_rows, replace=False)]
    out = {"n_rows": n_rows, "n_players": A.shape[1], "ref_n_evals": ref_n_evals}
    fitted = {}
    for label, algo, n_evals in (("previous default (kernel)", "kernel", None),
                                 ("default", "auto", None), ("auto, n_evals=8", "auto", 8),
                                 ("frontier_shared", "frontier_shared", None)):
        ex = KnockoffSHAP(FrozenEstimator(model), algorithm=algo, n_evals=n_evals,
                          random_state=0).fit(A)
        ex.explain(rows[:2])                            # warm caches
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            att = ex.explain(rows)
            times.append(time.perf_counter() - t0)
        fitted[label] = (ex, att)
        out[label] = {"algorithm": ex.algorithm_, "n_evals": ex.n_evals_,
                      "rows_per_s": n_rows / float(np.median(times)),
                      "n_evaluations_per_row": att.extras["n_evaluations"] / n_rows}
    ex = fitted["default"][0]
    seed = draw_base_seed(0)
    ko = _draw_knockoffs(ex.sampler_, rows, ex.n_knockoffs,
                         int(stream_seeds(seed, _KNOCKOFF_STREAM)), row_keys(rows))
    refs = []
    for s in (11, 12):
        game = ImputationGame(ex.model_fn_, rows, ko)
        refs.append(permutation_shapley(game, ref_n_evals,
                                        keyed_generators(s, range(n_rows)))[0][:, :, 0])
    ref = (refs[0] + refs[1]) / 2
    out["reference_error"] = float(np.abs(refs[0] - refs[1]).mean() / 2)
    for label, (_, att) in fitted.items():
        out[label]["mae"] = float(np.abs(att.values - ref).mean())
    prev, new = out["previous default (kernel)"], out["default"]
    out["speedup"] = new["rows_per_s"] / prev["rows_per_s"]
    out["error_ratio"] = new["mae"] / prev["mae"]
    return out


def bench_sage(rhos, replicates, method="mvr"):
    rows = []
    for rho in rhos:
        t0 = time.perf_counter()
        res = []
        for seed in range(replicates):
            res.append(sage_simulation(rho, seed, sampler=GaussianKnockoffs(method=method)))
            if (seed + 1) % 10 == 0:
                ko_n = sum(int(np.argmax(r["knockoff"]) == 0) for r in res)
                mg_n = sum(int(np.argmax(r["marginal"]) == 0) for r in res)
                print(f"  rho={rho}: {seed + 1} replicates, x1 first knockoff {ko_n}, "
                      f"marginal {mg_n} ({time.perf_counter() - t0:.0f} s)", flush=True)
        ko = np.array([r["knockoff"] for r in res])
        mg = np.array([r["marginal"] for r in res])
        rows.append({
            "rho": rho, "replicates": replicates, "method": method,
            "knockoff_x1_first": float(np.mean(ko.argmax(axis=1) == 0)),
            "marginal_x1_first": float(np.mean(mg.argmax(axis=1) == 0)),
            "knockoff_mean": ko.mean(axis=0).round(4).tolist(),
            "marginal_mean": mg.mean(axis=0).round(4).tolist(),
            "fidelity": float(np.mean([r["fidelity"] for r in res])),
            "seconds": time.perf_counter() - t0,
        })
        print(json.dumps(rows[-1]), flush=True)
    return rows


def bench_errors(n_rows, tols, sage_seeds):
    import warnings

    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_xai.shapley import KnockoffSAGE

    rng = np.random.default_rng(0)
    P = 8
    X = rng.multivariate_normal(np.zeros(P), 0.5 + 0.5 * np.eye(P), size=2000)
    y = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) * X[:, 3] + X[:, 4] - X[:, 5] * X[:, 6]
         * X[:, 7] + 0.3 * rng.normal(size=2000))
    model = FrozenEstimator(HistGradientBoostingRegressor(max_iter=200, random_state=0)
                            .fit(X, y))
    rows = X[:n_rows]
    t0 = time.perf_counter()
    truth = KnockoffSHAP(model, n_knockoffs=1500, algorithm="exact", random_state=123).fit(
        X).explain(rows).values
    out = {"n_rows": n_rows, "truth_s": time.perf_counter() - t0,
           "mean_sum_abs_phi": float(np.abs(truth).sum(axis=1).mean()), "fixed": [],
           "auto": []}

    def score(att):
        std = np.nan_to_num(att.std, nan=0.0)
        return {"ae": float(np.abs(att.values - truth).sum(axis=1).mean()),
                "coverage": float(np.mean(np.abs(att.values - truth) <= 1.96 * std + 1e-9))}

    for n_evals in (16, 64, 256):
        for K in (10, 40):
            t0 = time.perf_counter()
            att = KnockoffSHAP(model, n_knockoffs=K, algorithm="permutation", n_evals=n_evals,
                               random_state=0).fit(X).explain(rows)
            out["fixed"].append({"n_evals": n_evals, "n_knockoffs": K,
                                 "seconds": time.perf_counter() - t0, **score(att)})
            print(json.dumps(out["fixed"][-1]), flush=True)
    for tol in tols:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            att = KnockoffSHAP(model, n_knockoffs=10, algorithm="permutation", n_evals="auto",
                               tol=tol, random_state=0).fit(X).explain(rows)
        ne, K = att.extras["n_evals"], att.extras["n_knockoffs"]
        out["auto"].append({"tol": tol, "seconds": time.perf_counter() - t0, **score(att),
                            "n_evals_mean": float(ne.mean()), "n_evals_max": int(ne.max()),
                            "n_knockoffs_mean": float(K.mean()), "n_knockoffs_max": int(K.max()),
                            "capped": int(np.sum((ne >= 1024) & (K >= 160)))})
        print(json.dumps(out["auto"][-1]), flush=True)
    hits = []
    yr = y[:200]
    for seed in range(sage_seeds):
        kw = {"n_knockoffs": 5, "random_state": seed}
        exact = KnockoffSAGE(model, algorithm="exact", **kw).fit(X).explain(X[:200], yr)
        perm = KnockoffSAGE(model, n_permutations=16, tol=None, **kw).fit(
            X).explain(X[:200], yr)
        hits.append(np.abs(perm.importances - exact.importances) <= 1.96 * perm.std)
    out["sage_coverage"] = float(np.mean(hits))
    out["sage_seeds"] = sage_seeds
    print(json.dumps({"sage_coverage": out["sage_coverage"]}), flush=True)
    print()
    print(f"rows={n_rows}, P={P}, truth: exact enumeration, 1500 knockoffs per row; mean "
          f"sum |phi| = {out['mean_sum_abs_phi']:.3f}")
    print()
    print("| budget | n_evals (mean / max) | knockoffs (mean / max) | AE | 95 % coverage | s |")
    print("|---|---|---|---|---|---|")
    for r in out["fixed"]:
        print(f"| fixed | {r['n_evals']} | {r['n_knockoffs']} | {r['ae']:.4f} | "
              f"{r['coverage']:.3f} | {r['seconds']:.1f} |")
    for r in out["auto"]:
        print(f"| auto, tol={r['tol']} | {r['n_evals_mean']:.0f} / {r['n_evals_max']} | "
              f"{r['n_knockoffs_mean']:.0f} / {r['n_knockoffs_max']} | {r['ae']:.4f} | "
              f"{r['coverage']:.3f} | {r['seconds']:.1f} |")
    print()
    print(f"KnockoffSAGE (16 permutation rounds, 200 rows, 5 knockoffs) against its exact "
          f"algorithm on the same knockoffs, {sage_seeds} seeds x {P} importances: 95 % "
          f"coverage {out['sage_coverage']:.3f}")
    return out


SAGE_SNIPPET = r"""
import json, pickle, sys, time
import numpy as np
import sage
d = pickle.load(open(sys.argv[1], "rb"))
model, bg, X, Y, exact = d["model"], d["background"], d["X"], d["Y"], np.asarray(d["exact"])
imputer = sage.MarginalImputer(model.predict_proba, bg)
from importlib.metadata import version
out = {"version": version("sage-importance"), "budgets": {}, "default": {}}
P, n = X.shape[1], X.shape[0]
for rounds in d["rounds"]:
    # as many model evaluations per row as `rounds` of KnockoffSAGE's permutation rounds:
    # a sage permutation evaluates P + 1 coalitions, a round P - 1 (+ 2 once per row)
    n_perm = int(round((rounds * (P - 1) + 2) / (P + 1) * n))
    errs, secs = [], []
    for seed in range(d["seeds"]):
        est = sage.PermutationEstimator(imputer, "cross entropy", random_state=seed)
        t0 = time.perf_counter()
        res = est(X, Y, batch_size=n, detect_convergence=False, n_permutations=n_perm,
                  bar=False)
        secs.append(time.perf_counter() - t0)
        errs.append(float(np.abs(res.values - exact).mean()))
    out["budgets"][str(rounds)] = {"mae": float(np.mean(errs)), "seconds": float(np.median(secs)),
                                   "evals_per_row": n_perm * (P + 1) / n}
errs, secs, perms = [], [], []
for seed in range(d["seeds"]):
    est = sage.PermutationEstimator(imputer, "cross entropy", random_state=seed)
    t0 = time.perf_counter()
    res = est(X, Y, batch_size=n, thresh=0.025, bar=False)   # its default stop rule
    secs.append(time.perf_counter() - t0)
    errs.append(float(np.abs(res.values - exact).mean()))
out["default"] = {"mae": float(np.mean(errs)), "seconds": float(np.median(secs))}
print(json.dumps(out))
"""


def _sage_rounds(n_evals, P):
    """KnockoffSAGE's permutation rounds at about ``n_evals`` coalitions per player and row
    (``n_evals P / (P - 1)``), in whole antithetic pairs."""
    return 2 * max(1, round(n_evals * P / (P - 1) / 2))


def bench_sage_frontier(n_rows, budgets, seeds, sage_python=None):
    """KnockoffSAGE by the frontier and by the permutation rounds, equal model evaluations,
    against its exact algorithm (part 5 of the module docstring)."""
    from bench_shapley import _adult  # the Adult game's integer codes, as bench_shapley's
    from sklearn.ensemble import HistGradientBoostingClassifier

    from sklearn_xai.shapley import KnockoffSAGE

    A, y, _ = _adult()
    rng = np.random.default_rng(0)
    train = rng.choice(len(A), 5000, replace=False)
    model = FrozenEstimator(HistGradientBoostingClassifier(max_iter=100, random_state=0)
                            .fit(A[train], y[train]))
    common = {"imputation": "marginal", "background": A[rng.choice(len(A), 16, replace=False)]}
    rows = rng.choice(len(A), n_rows, replace=False)
    Xe, ye = A[rows], y[rows]
    P = A.shape[1]
    t0 = time.perf_counter()
    exact = KnockoffSAGE(model, algorithm="exact", **common).fit(A).explain(Xe, ye)
    out = {"n_rows": n_rows, "n_players": P, "exact_seconds": time.perf_counter() - t0,
           "exact": exact.importances.tolist(), "budgets": {}}
    # the default: permutation rounds until tol = 0.025 of the importances' range
    errs, rounds_run, secs = [], [], []
    for seed in range(seeds):
        est = KnockoffSAGE(model, random_state=seed, **common).fit(A)
        t0 = time.perf_counter()
        res = est.explain(Xe, ye)
        secs.append(time.perf_counter() - t0)
        errs.append(float(np.abs(res.importances - exact.importances).mean()))
        rounds_run.append(res.n_permutations)
    out["default"] = {"mae": float(np.mean(errs)), "rounds": float(np.mean(rounds_run)),
                      "seconds": float(np.median(secs))}
    print(f"default (tol=0.025): MAE {np.mean(errs):.3g}, {np.mean(rounds_run):.1f} rounds, "
          f"{np.median(secs):.2f} s", flush=True)
    for b in budgets:
        rounds = _sage_rounds(b, P)
        cell = {}
        for name, kw in (("frontier", {"algorithm": "frontier", "n_evals": b}),
                         ("permutation", {"n_permutations": rounds, "tol": None})):
            errs, cover, secs, evals = [], [], [], 0
            for seed in range(seeds):
                est = KnockoffSAGE(model, random_state=seed, **kw, **common).fit(A)
                t0 = time.perf_counter()
                res = est.explain(Xe, ye)
                secs.append(time.perf_counter() - t0)
                errs.append(float(np.abs(res.importances - exact.importances).mean()))
                cover.append(float(np.mean(np.abs(res.importances - exact.importances)
                                           <= 1.96 * res.std)))
                evals = (res.extras["n_evaluations"] if name == "frontier"
                         else n_rows * (res.n_permutations * (P - 1) + 2))
            cell[name] = {"mae": float(np.mean(errs)), "cover": float(np.mean(cover)),
                          "seconds": float(np.median(secs)), "evals_per_row": evals / n_rows}
        cell["ratio"] = cell["frontier"]["mae"] / cell["permutation"]["mae"]
        out["budgets"][b] = cell
        f, q = cell["frontier"], cell["permutation"]
        print(f"n_evals {b:3d}: frontier MAE {f['mae']:.3g} ({f['evals_per_row']:.0f} evals/row, "
              f"{f['seconds']:.2f} s, cover {f['cover']:.2f}) | permutation ({rounds} rounds) "
              f"{q['mae']:.3g} ({q['evals_per_row']:.0f} evals/row, {q['seconds']:.2f} s, cover "
              f"{q['cover']:.2f}) | ratio {cell['ratio']:.3f}", flush=True)
    if sage_python:
        # sage-importance (Covert et al.'s SAGE) on the same model, background, rows and
        # loss, in its own environment: its PermutationEstimator at the same model
        # evaluations per row as our rounds, and at its default stop rule (thresh=0.025)
        import pickle
        import tempfile

        rounds = sorted({_sage_rounds(b, P) for b in budgets})
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "sage_game.pkl"
            with open(path, "wb") as fh:
                pickle.dump({"model": model.estimator, "background": common["background"],
                             "X": Xe, "Y": ye.astype(int), "exact": exact.importances,
                             "rounds": rounds, "seeds": seeds}, fh)
            res = subprocess.run([sage_python, "-c", SAGE_SNIPPET, str(path)],
                                 capture_output=True, text=True, check=True)
        peer = json.loads(res.stdout.strip().splitlines()[-1])
        out["sage_importance"] = peer
        d = peer["default"]
        print(f"sage-importance {peer['version']} default (thresh=0.025): MAE {d['mae']:.3g}, "
              f"{d['seconds']:.2f} s", flush=True)
        for r in rounds:
            c = peer["budgets"][str(r)]
            print(f"sage-importance at {c['evals_per_row']:.0f} evals/row ({r} of our rounds): MAE "
                  f"{c['mae']:.3g}, {c['seconds']:.2f} s", flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--knockpy-python", default=None,
                        help="interpreter with knockpy installed (default: this one, if it "
                             "imports knockpy)")
    parser.add_argument("--json", default=None, help="write the results to this file")
    parser.add_argument("--only", choices=["gaussian", "german", "sage", "errors", "sage-frontier",
                                 "default"],
                        action="append",
                        help="run only these parts (repeatable)")
    parser.add_argument("--sage-python", default=None,
                        help="interpreter with sage-importance (and this scikit-learn) "
                             "installed, for the peer in the sage-frontier part")
    parser.add_argument("--sage-rhos", type=float, nargs="+", default=None)
    parser.add_argument("--sage-replicates", type=int, default=None)
    parser.add_argument("--sage-method", choices=["mvr", "sdp", "equicorrelated"],
                        default="mvr", help="s method of the knockoffs in the SAGE part")
    args = parser.parse_args()
    quick = args.quick
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "python": platform.python_version(), "numpy": np.__version__,
        "sklearn": sklearn.__version__, "quick": quick,
    }
    parts = args.only or ["gaussian", "german", "sage", "errors", "sage-frontier", "default"]
    if "gaussian" in parts:
        print("== Gaussian MVR knockoffs 10,000 x 20, K = 10", flush=True)
        results["gaussian"] = bench_gaussian(args.knockpy_python, 1 if quick else 3)
        print(json.dumps(results["gaussian"]), flush=True)
    if "german" in parts:
        print("== German Credit attack", flush=True)
        # n_evals per player and row: 28 players, 4 (8) -> 4 (8) antithetic permutations
        results["german"] = bench_german([30] if quick else [10, 30, 50], 100,
                                         4 if quick else 8)
        print(json.dumps(results["german"]), flush=True)
    if "sage" in parts:
        print("== SAGE simulation", flush=True)
        rhos = args.sage_rhos or ([0.5] if quick else [0.0, 0.3, 0.5, 0.7, 0.9])
        results["sage"] = bench_sage(rhos, args.sage_replicates or (10 if quick else 100),
                                     args.sage_method)
    if "errors" in parts:
        print("== Error bars and n_evals='auto'", flush=True)
        results["errors"] = bench_errors(20 if quick else 40, [0.3] if quick else [0.3, 0.1],
                                         10 if quick else 40)
    if "sage-frontier" in parts:
        print("== KnockoffSAGE: frontier against the permutation rounds, Adult", flush=True)
        results["sage_frontier"] = bench_sage_frontier(100 if quick else 200,
                                                       [2, 4, 8, 16, 32], 4 if quick else 8,
                                                       args.sage_python)
    if "default" in parts:
        print("== KnockoffSHAP at its default settings, German credit", flush=True)
        results["default"] = bench_default(8 if quick else 32)
        print(json.dumps(results["default"]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
