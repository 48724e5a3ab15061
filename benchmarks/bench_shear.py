"""SHEAR on UCI Adult: the paper's experiment (Wang et al., ICML 2022, section 5).

13 players (5 standardised numeric features, 8 one-hot categorical groups), a skorch MLP
64-64 with softplus, the class-1 logit explained against one reference row (numeric means,
most frequent category of each group). Ground truth: exact enumeration of the 2^13
coalitions. For each budget N (``n_evals``: coalition evaluations per player and row, the
package's one budget unit; M*N + 2 per row) we compare

* SHEAR (``ShearExplainer``, Hessian cooperators) with the unbiased Beta fill
  (``non_cooperators="shapley"``, our default) and with the authors' uniform fill;
* SHEAR with finite-difference and with random cooperators (the paper's ablation);
* antithetic permutation sampling and KernelSHAP (the package's ``"permutation"`` and
  ``"kernel"`` algorithms) at the same ``n_evals = N``;
* ``ShearExplainer(algorithm="frontier")`` and ``algorithm="frontier_shared"`` (designs
  shared by the rows; its first call, which computes the designs' maps, timed apart);

on absolute error (sum over players of |phi_hat - phi|, mean over rows) and the paper's
weighted ranking accuracy of signed values, and time SHEAR with and without its
cross-contribution step against the bare (M*N + 2)*rows forwards of the module in one batch
(medians, each method's calls in turn with the forwards': a ratio of medians).

Error bars: for every budget, the share of values whose 95 % interval
(``values +- 1.96 std``) holds the exact value, with one round of fills (``n_rounds=1``,
the default: the most cooperators) and with two (``n_rounds=2``: one cooperator less,
two fills per pair of subsets), and ``n_evals="auto"`` at several tolerances (the budget
it chose per row, its error and coverage) against the fixed budgets.

Run ``python benchmarks/bench_shear.py --quick`` (about a minute on 2 cores) or without
``--quick`` for the full run (500 test rows, 20 training epochs).
"""

import argparse
import platform
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout


def load_adult_encoded(seed=0):
    """Adult train file, split 60/20/20 (random_state=0), numeric standardised, one-hot groups."""
    from sklearn.model_selection import train_test_split

    from sklearn_xai.datasets import load_adult

    X, y = load_adult(subset="train")
    numeric = ["age", "education_num", "capital_gain", "capital_loss", "hours_per_week"]
    categorical = ["workclass", "education", "marital_status", "occupation", "relationship",
                   "race", "native_country", "sex"]
    X_tr, X_te, y_tr, y_te = train_test_split(X, y.to_numpy(), test_size=0.2, random_state=seed)
    X_tr, X_va, y_tr, y_va = train_test_split(X_tr, y_tr, test_size=0.25, random_state=seed)
    mu = X_tr[numeric].mean()
    sd = X_tr[numeric].std()
    blocks, groups, start = [], {}, 0

    def encode(frame):
        cols = [((frame[numeric] - mu) / sd).to_numpy(np.float32)]
        for c in categorical:
            levels = list(X[c].cat.categories) + ["?"]
            codes = frame[c].astype(object).where(frame[c].notna(), "?")
            idx = np.array([levels.index(v) for v in codes])
            cols.append(np.eye(len(levels), dtype=np.float32)[idx])
        return np.concatenate(cols, axis=1)

    for k, c in enumerate(numeric):
        groups[c] = [k]
    start = len(numeric)
    for c in categorical:
        width = len(X[c].cat.categories) + 1
        groups[c] = list(range(start, start + width))
        start += width
    del blocks
    return (encode(X_tr), y_tr, encode(X_va), y_va, encode(X_te), y_te, groups)


def train_mlp(X_tr, y_tr, X_va, y_va, epochs, seed=0):
    import torch
    from skorch import NeuralNetClassifier
    from skorch.callbacks import GradientNormClipping
    from skorch.dataset import Dataset
    from skorch.helper import predefined_split

    torch.manual_seed(seed)
    d = X_tr.shape[1]
    module = torch.nn.Sequential(torch.nn.Linear(d, 64), torch.nn.Softplus(),
                                 torch.nn.Linear(64, 64), torch.nn.Softplus(),
                                 torch.nn.Linear(64, 2))
    net = NeuralNetClassifier(module, criterion=torch.nn.CrossEntropyLoss,
                              optimizer=torch.optim.Adam, lr=1e-3, batch_size=256,
                              max_epochs=epochs, train_split=predefined_split(Dataset(X_va, y_va)),
                              callbacks=[GradientNormClipping(0.1)], verbose=0)
    net.fit(X_tr, y_tr)
    return net


def timed(func, repeats):
    """(median wall time over ``repeats`` calls, last result)."""
    times, out = [], None
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = func()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def timed_beside(func, floor, repeats):
    """(median time of ``func`` over that of ``floor``, median time of ``func``, last
    result), the two called in turn ``repeats`` times: the machine's drift (it is shared)
    hits both alike."""
    times, floors, out = [], [], None
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = func()
        times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        floor()
        floors.append(time.perf_counter() - t0)
    return float(np.median(times) / np.median(floors)), float(np.median(times)), out


def shap_permutation(fn, X, ref, groups, max_evals, truth, seed=0):
    """shap's PermutationExplainer on the same game at ``max_evals`` coalition evaluations
    per row: the game is handed to shap as a model of binary inputs (the explained row all
    ones, the background row all zeros), so shap's masked rows are the coalitions. Returns
    the absolute error (sum over players, mean over rows) and the seconds; None when shap
    is not installed."""
    try:
        import shap
    except ImportError:
        return None, None
    from sklearn_xai.shapley import ImputationGame

    P = len(groups)
    ones, zeros = np.ones((1, P)), np.zeros((1, P))
    est = np.empty((X.shape[0], P))
    t0 = time.perf_counter()
    for r in range(X.shape[0]):
        game = ImputationGame(fn, X[r:r + 1], ref, groups=groups)

        def f(Z, game=game):
            return game.value(np.asarray(Z) > 0.5)[0, :, 0]
        # its own seed: PermutationExplainer(seed=None) reseeds numpy from the OS
        ex = shap.PermutationExplainer(f, shap.maskers.Independent(zeros), seed=seed + r)
        est[r] = ex(ones, max_evals=max_evals).values[0]
    return float(np.abs(est - truth).sum(axis=1).mean()), time.perf_counter() - t0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 rows, 5 epochs")
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--budgets", type=int, nargs="+", default=[8, 16, 32, 64, 128])
    parser.add_argument("--repeats", type=int, default=5,
                        help="timing: median of this many calls (in turn with the bare "
                             "forwards where a time is given over theirs)")
    parser.add_argument("--tols", type=float, nargs="+", default=[0.05, 0.001, 0.0002],
                        help="tolerances of n_evals='auto'")
    args = parser.parse_args(argv)
    rows = args.rows or (40 if args.quick else 500)
    epochs = args.epochs or (5 if args.quick else 20)

    import sklearn
    import torch
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.frozen import FrozenEstimator

    from sklearn_xai import ShearExplainer
    from sklearn_xai._utils import keyed_generators
    from sklearn_xai.metrics import absolute_error, ranking_accuracy
    from sklearn_xai.shapley import ImputationGame, _frontier, exact_shapley, kernel_shapley
    from sklearn_xai.shapley import permutation_shapley as perm
    from sklearn_xai.shapley._shear import _cross_contribution_hessian

    torch.set_num_threads(max(1, torch.get_num_threads()))
    X_tr, y_tr, X_va, y_va, X_te, y_te, groups = load_adult_encoded()
    t0 = time.perf_counter()
    net = train_mlp(X_tr, y_tr, X_va, y_va, epochs)
    acc = float((net.predict(X_te) == y_te).mean())
    print(f"# MLP 64-64 softplus, {epochs} epochs in {time.perf_counter() - t0:.1f}s, "
          f"test accuracy {acc:.4f}")
    X = X_te[:rows]
    M = len(groups)

    base = ShearExplainer(FrozenEstimator(net), response_method="decision_function",
                          feature_groups=groups, cooperators="hessian", random_state=0)
    base.fit(X_tr)
    fn, ref = base.model_fn_, base.reference_
    t0 = time.perf_counter()
    game = ImputationGame(fn, X, ref, groups=base.groups_)
    truth = exact_shapley(game)[0][:, :, 0]
    t_exact = time.perf_counter() - t0
    print(f"# ground truth: 2^{M} coalitions x {rows} rows in {t_exact:.1f}s; "
          f"mean sum|phi| = {np.abs(truth).sum(1).mean():.3f}")

    module = net.module_
    results = []

    def coverage(att):
        """Share of the values whose 95 % interval holds the exact value (a NaN standard
        error counts as no interval), the share of NaN standard errors and the mean
        half-width of the intervals."""
        std = att.std
        if std is None:
            return 1.0, 0.0, 0.0
        # 1e-6: the float32 module's round-off between the enumeration (ImputationGame)
        # and SHEAR's factored first layer, up to about 4e-7 on these logits
        hit = np.abs(att.values - truth) <= 1.96 * np.nan_to_num(std, nan=0.0) + 1e-6
        return (float(hit.mean()), float(np.isnan(std).mean()),
                float(np.nanmean(1.96 * std)) if not np.isnan(std).all() else np.nan)

    def acc_of(values):
        # exact zeros (players whose x equals the reference) tie; rounding noise of the
        # enumeration must not order them, so values below 1e-9 count as 0 on both sides
        return ranking_accuracy(np.where(np.abs(values) < 1e-9, 0.0, values),
                                np.where(np.abs(truth) < 1e-9, 0.0, truth))
    for N in args.budgets:
        row = {"N": N}
        # the bare forwards: M N + 2 rows per explained row (the evaluations each method
        # spends) through the module, in one batch; each time over theirs is a ratio of
        # medians taken in turn with them
        Z = torch.as_tensor(np.repeat(X, M * N + 2, axis=0))

        def floor(Z=Z):
            with torch.inference_mode():
                return module(Z)
        floor()
        row["floor_time"], _ = timed(floor, args.repeats)
        for label, kw in (("shear", {}), ("shear_uniform", {"non_cooperators": "uniform"})):
            e = ShearExplainer(FrozenEstimator(net), response_method="decision_function",
                               feature_groups=groups, cooperators="hessian", n_evals=N,
                               batch_size=rows, random_state=0, **kw).fit(X_tr)
            ratio, t, a = timed_beside(lambda e=e: e.explain(X), floor, args.repeats)
            row[label + "_time"], row[label + "_ratio"] = t, ratio
            row[label + "_ae"] = absolute_error(a.values, truth)
            row[label + "_acc"] = acc_of(a.values)
            if label == "shear":
                row["shear_cover"], row["shear_nan"], row["shear_width"] = coverage(a)
        e = ShearExplainer(FrozenEstimator(net), response_method="decision_function",
                           feature_groups=groups, cooperators="hessian", n_evals=N,
                           n_rounds=2, batch_size=rows, random_state=0).fit(X_tr)
        a = e.explain(X)
        row["r2_K"], row["r2_ae"] = e.n_cooperators_, absolute_error(a.values, truth)
        row["r2_cover"], _, row["r2_width"] = coverage(a)
        for label, coop in (("shear_fd", "finite_difference"), ("shear_random", "random")):
            e2 = ShearExplainer(FrozenEstimator(net), response_method="decision_function",
                                feature_groups=groups, cooperators=coop, n_evals=N,
                                batch_size=rows, random_state=0).fit(X_tr)
            a = e2.explain(X)
            row[label + "_ae"] = absolute_error(a.values, truth)
        row["cc_time"], _ = timed(lambda: _cross_contribution_hessian(
            partial(fn.hessian_columns, float64=False), X.astype(np.float64),
            ref[0].astype(np.float64),
            e.col_to_player_, M), args.repeats)
        e3 = ShearExplainer(FrozenEstimator(net), response_method="decision_function",
                            feature_groups=groups, n_evals=N, algorithm="frontier",
                            batch_size=rows, random_state=0).fit(X_tr)
        row["frontier_ratio"], t, a = timed_beside(lambda e3=e3: e3.explain(X), floor,
                                                   args.repeats)
        row["frontier_time"], row["frontier_ae"] = t, absolute_error(a.values, truth)
        row["frontier_acc"] = acc_of(a.values)
        row["frontier_cover"] = coverage(a)[0]
        # shared designs: the first call computes (and caches) the designs' linear maps,
        # the next ones reuse them; both timed
        _frontier._shared_cache.clear()
        e4 = ShearExplainer(FrozenEstimator(net), response_method="decision_function",
                            feature_groups=groups, n_evals=N, algorithm="frontier_shared",
                            batch_size=rows, random_state=0).fit(X_tr)
        row["shared_cold"], _ = timed(lambda e4=e4: e4.explain(X), 1)
        row["shared_ratio"], t, a = timed_beside(lambda e4=e4: e4.explain(X), floor,
                                                 args.repeats)
        row["shared_time"], row["shared_ae"] = t, absolute_error(a.values, truth)
        row["shared_cover"] = coverage(a)[0]
        row["shap_perm_ae"], row["shap_perm_time"] = shap_permutation(fn, X, ref, base.groups_,
                                                                      N * M + 2, truth)
        g = ImputationGame(fn, X, ref, groups=base.groups_)
        t, res = timed(lambda: perm(g, N, keyed_generators(0, range(rows)), antithetic=True),
                       args.repeats)
        phi = res[0][:, :, 0]
        row["aps_time"], row["aps_ae"], row["aps_acc"] = t, absolute_error(phi, truth), acc_of(phi)
        t, res = timed(lambda: kernel_shapley(g, N, keyed_generators(0, range(rows))),
                       1 if N >= 64 else args.repeats)
        phi = res[0][:, :, 0]
        row["ks_time"], row["ks_ae"], row["ks_acc"] = t, absolute_error(phi, truth), acc_of(phi)
        Z = None
        results.append(row)
        print(row, flush=True)

    auto = []
    for tol in args.tols:
        e = ShearExplainer(FrozenEstimator(net), response_method="decision_function",
                           feature_groups=groups, cooperators="hessian", n_evals="auto",
                           tol=tol, batch_size=rows, random_state=0).fit(X_tr)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t, a = timed(lambda e=e: e.explain(X), 1)
        budget = a.extras["n_evals"]
        cover, _, _ = coverage(a)
        auto.append({"tol": tol, "time": t, "ae": absolute_error(a.values, truth),
                     "cover": cover, "mean": budget.mean(), "median": np.median(budget),
                     "max": budget.max(), "capped": int(np.sum(a.extras["n_rounds"] >= 64))})
        print(auto[-1], flush=True)

    print()
    print(f"rows={rows}, M={M}, epochs={epochs}, torch {torch.__version__}, "
          f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, "
          f"python {platform.python_version()}, threads {torch.get_num_threads()}")
    print()
    print("| N | SHEAR AE / ACC | SHEAR (uniform fill, paper) AE / ACC | APS AE / ACC | "
          "KernelSHAP AE / ACC |")
    print("|---|---|---|---|---|")
    for r in results:
        print(f"| {r['N']} | {r['shear_ae']:.4f} / {r['shear_acc']:.3f} | "
              f"{r['shear_uniform_ae']:.4f} / {r['shear_uniform_acc']:.3f} | "
              f"{r['aps_ae']:.4f} / {r['aps_acc']:.3f} | {r['ks_ae']:.4f} / {r['ks_acc']:.3f} |")
    print()
    print("Equal evaluations (N * M + 2 per row) against shap's PermutationExplainer: "
          "absolute error and its ratio; time over the bare forwards")
    print()
    print("| N | SHEAR AE | frontier AE | frontier_shared AE | shap Permutation AE | "
          "SHEAR / shap | frontier / shap | frontier_shared / shap | SHEAR time / bare | "
          "frontier time / bare | frontier_shared time / bare (first call) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        sp = r["shap_perm_ae"] or float("nan")
        print(f"| {r['N']} | {r['shear_ae']:.5f} | {r['frontier_ae']:.6f} | "
              f"{r['shared_ae']:.6f} | {sp:.5f} | "
              f"{r['shear_ae'] / sp:.2f} | {r['frontier_ae'] / sp:.3f} | "
              f"{r['shared_ae'] / sp:.3f} | "
              f"{r['shear_ratio']:.2f}x | {r['frontier_ratio']:.1f}x | "
              f"{r['shared_ratio']:.2f}x ({r['shared_cold'] / r['floor_time']:.1f}x) |")
    print()
    print("95 % coverage of the values' intervals: SHEAR / frontier / frontier_shared")
    print()
    print("| N | SHEAR | frontier | frontier_shared |")
    print("|---|---|---|---|")
    for r in results:
        print(f"| {r['N']} | {r['shear_cover']:.3f} | {r['frontier_cover']:.3f} | "
              f"{r['shared_cover']:.3f} |")
    print()
    print("Cooperator selection (SHEAR AE, Beta fill): Hessian / finite differences / random")
    print()
    print("| N | Hessian | finite differences | random (ablation) |")
    print("|---|---|---|---|")
    for r in results:
        print(f"| {r['N']} | {r['shear_ae']:.4f} | {r['shear_fd_ae']:.4f} | "
              f"{r['shear_random_ae']:.4f} |")
    print()
    print("| N | SHEAR rows/s (total) | SHEAR rows/s without cross-contribution | "
          "cross-contribution s | APS rows/s | KernelSHAP rows/s | bare forwards s | "
          "SHEAR total / bare |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        t = r["shear_time"]
        print(f"| {r['N']} | {rows / t:.0f} | {rows / max(t - r['cc_time'], 1e-9):.0f} | "
              f"{r['cc_time']:.3f} | {rows / r['aps_time']:.0f} | {rows / r['ks_time']:.0f} | "
              f"{r['floor_time']:.3f} | {r['shear_ratio']:.2f}x |")
    print()
    print("Error bars of SHEAR at a fixed budget: share of the values within 1.96 standard "
          "errors of the exact value (95 % coverage), NaN share, mean interval half-width "
          "1.96 std")
    print()
    print("| N | n_rounds=1: K / AE / coverage / NaN / half-width | "
          "n_rounds=2: K / AE / coverage / half-width |")
    print("|---|---|---|")
    for r in results:
        K1 = min(int(np.log2(r["N"])) - 1, M - 1)
        print(f"| {r['N']} | {K1} / {r['shear_ae']:.4f} / {r['shear_cover']:.3f} / "
              f"{r['shear_nan']:.3f} / {r['shear_width']:.4f} | {r['r2_K']} / "
              f"{r['r2_ae']:.4f} / {r['r2_cover']:.3f} / {r['r2_width']:.4f} |")
    print()
    print("| n_evals='auto', tol | mean / median / max n_evals per row | rows at the cap | "
          "AE | 95 % coverage | rows/s |")
    print("|---|---|---|---|---|---|")
    for r in auto:
        print(f"| {r['tol']} | {r['mean']:.0f} / {r['median']:.0f} / {r['max']:.0f} | "
              f"{r['capped']} | {r['ae']:.4f} | {r['cover']:.3f} | {rows / r['time']:.0f} |")
    return results, auto


if __name__ == "__main__":
    main()
