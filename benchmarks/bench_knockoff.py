"""Benchmark of the knockoff samplers, KnockoffSHAP and KnockoffSAGE.

1. Gaussian MVR knockoffs, 10,000 x 20 rows (AR(1) correlation 0.5), 10 knockoffs per
   row: fit (covariance + s) and sampling time; knockpy on the same data when it can be
   imported here or when ``--knockpy-python`` names an interpreter that has it.
2. The German Credit attack (Slack et al. detector: 100 trees, 5e4 k-means(10)
   hybrids): share of test rows with Gender / LoanRate ranked first (strictly largest
   |phi|) under marginal and knockoff imputation, and KnockoffSHAP rows/s.
3. The SAGE simulation (4 equicorrelated Gaussians, adversary x1 on real rows, x2
   otherwise): share of replicates with x1 ranked first, knockoff vs marginal SAGE.

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
from sklearn_xai.shapley._attack import (
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--knockpy-python", default=None,
                        help="interpreter with knockpy installed (default: this one, if it "
                             "imports knockpy)")
    parser.add_argument("--json", default=None, help="write the results to this file")
    parser.add_argument("--only", choices=["gaussian", "german", "sage"], action="append",
                        help="run only these parts (repeatable)")
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
    parts = args.only or ["gaussian", "german", "sage"]
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
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
