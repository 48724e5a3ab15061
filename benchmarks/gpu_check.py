"""CPU vs CUDA check of the torch paths (TorchModelFunction, ShearExplainer with Hessians).

Runs in well under a minute. Prints timings and the largest CPU-vs-CUDA differences; exits
with status 0 and the line "no CUDA" when no CUDA device is available, with status 1 when a
difference is larger than its tolerance.

    python benchmarks/gpu_check.py
"""

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout


def _timed(func, repeats=3, sync=None):
    best, out = np.inf, None
    for _ in range(repeats):
        if sync:
            sync()
        t0 = time.perf_counter()
        out = func()
        if sync:
            sync()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None):
    import argparse

    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda",
                        help="device compared with the CPU (default cuda; 'cpu' dry-runs)")
    dev2 = parser.parse_args(argv).device
    if dev2.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA: nothing to check (torch", torch.__version__, ")")
        return 0
    import copy

    from sklearn_xai import ShearExplainer
    from sklearn_xai._torch import TorchModelFunction

    if dev2.startswith("cuda"):
        print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__)
    sync = torch.cuda.synchronize if dev2.startswith("cuda") else None
    rng = np.random.default_rng(0)
    d, n = 64, 2000
    groups = [[k] for k in range(8)] + [list(range(8 + 8 * g, 16 + 8 * g)) for g in range(7)]
    X = rng.normal(size=(n, d))
    for g in groups[8:]:  # one-hot blocks
        X[:, g] = np.eye(len(g))[rng.integers(0, len(g), size=n)]
    failures = []
    for dtype, tol in ((torch.float64, 1e-9), (torch.float32, 2e-3)):
        torch.manual_seed(0)
        module = torch.nn.Sequential(torch.nn.Linear(d, 64), torch.nn.Softplus(),
                                     torch.nn.Linear(64, 64), torch.nn.Softplus(),
                                     torch.nn.Linear(64, 2)).to(dtype)
        cpu = TorchModelFunction(copy.deepcopy(module), output_columns=[1], device="cpu")
        gpu = TorchModelFunction(copy.deepcopy(module), output_columns=[1], device=dev2)
        V = np.zeros((200, 6, d))
        V[np.arange(200)[:, None], np.arange(6)[None], rng.integers(0, d, (200, 6))] = 1.0
        checks = {
            "forward (2000 rows)": (lambda f: f(X), 1.0),
            "gradient (2000 rows)": (lambda f: f.gradient(X), 1.0),
            "hessian (200 rows)": (lambda f: f.hessian(X[:200]), 1.0),
            "hvp batched (200x6)": (lambda f: f.hessian_vector_product(X[:200], V), 1.0),
            "hvp vmap (200x6)": (lambda f: f.hessian_vector_product(X[:200], V, method="vmap"),
                                 1.0),
            "hessian columns (1200)": (lambda f: f.hessian_columns(
                X[:200], np.repeat(np.arange(200), 6), np.tile(np.arange(6), 200)), 1.0),
        }
        name = str(dtype).replace("torch.", "")
        for label, (call, scale) in checks.items():
            call(gpu)  # warm up
            t_c, a = _timed(lambda call=call: call(cpu))
            t_g, b = _timed(lambda call=call: call(gpu), sync=sync)
            diff = float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(a))))
            ok = diff <= tol * scale
            failures += [] if ok else [f"{name} {label}"]
            print(f"{name:8s} {label:22s} cpu {t_c * 1e3:8.1f} ms  {dev2} {t_g * 1e3:8.1f} ms  "
                  f"max rel diff {diff:.2e} {'ok' if ok else 'TOO LARGE'}")
        for N in (16, 64):
            res = {}
            for dev in ("cpu", dev2):
                e = ShearExplainer(copy.deepcopy(module), target=1, n_evals=N, device=dev,
                                   feature_groups=groups, cooperators="hessian", batch_size=500,
                                   random_state=0).fit(X)
                e.explain(X[:50])  # warm up
                t, a = _timed(lambda e=e: e.explain(X[:1000]), sync=sync if dev != "cpu" else None)
                res[dev] = (t, a)
            (t_c, a), (t_g, b) = res["cpu"], res[dev2]
            same_rows = (a.extras["cooperators"] == b.extras["cooperators"]).all(axis=2)
            same = float(same_rows.mean())
            # values can only agree where both devices picked the same cooperators
            diff = float(np.max(np.abs(a.values - b.values)[same_rows], initial=0.0))
            ok = diff <= tol * 10 * max(1.0, float(np.abs(a.values).max())) and same > 0.9
            failures += [] if ok else [f"{name} SHEAR N={N}"]
            print(f"{name:8s} SHEAR hessian N={N:<4d} cpu {1000 / t_c:8.0f} rows/s  {dev2} "
                  f"{1000 / t_g:8.0f} rows/s  same cooperators {same:.4f}  max |diff| {diff:.2e}"
                  f" {'ok' if ok else 'TOO LARGE'}")
    print("FAILED: " + ", ".join(failures) if failures else "all CPU/CUDA differences within "
          "tolerance")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
