"""shapiq's side of ``bench_shapley.py``: run every order-1 Shapley approximator of shapiq.

Run with the shapiq venv's Python (it imports only numpy and shapiq, not sklearn_xai)::

    VENV/bin/python benchmarks/_shapiq_side.py --dir DIR \
        --seeds 0,1 --budgets 2,4,8,16,32,64

For every game file ``DIR/<game>.npz`` (a full table of coalition values per row, or the
dividends of a dividend game), every approximator of ``shapiq.approximator.SV_APPROXIMATORS``
and every ``n_evals`` of ``--budgets``, it runs shapiq with ``budget = n_evals * P + 2``
(shapiq's budget counts the empty and the full coalition) on each row and seed, and writes
the estimates ``(n_seeds, n_rows, P)`` to ``DIR/sq_<game>_<approximator>_<n_evals>.npy``
and an index to ``DIR/shapiq_<game>.json`` (files already there are kept: a run resumes).
An approximator whose first call fails is skipped (its error is printed); one whose calls
take over ``--max-seconds`` on average is not run at larger budgets. Skipped by default:
SPEX (abstract in 1.8) and ProxySPEX (minutes per row with its hyper-parameter search).
"""

import argparse
import inspect
import json
import time
import warnings
from pathlib import Path

import numpy as np
import shapiq
from shapiq.approximator import SV_APPROXIMATORS

warnings.filterwarnings("ignore")


def table_game(table, P):
    weights = np.int64(1) << np.arange(P, dtype=np.int64)

    def v(coalitions):
        codes = np.atleast_2d(np.asarray(coalitions, dtype=np.int64)) @ weights
        return table[codes]
    return v


def dividend_game(sets, div, P):
    weights = np.int64(1) << np.arange(P, dtype=np.int64)

    def v(coalitions):
        codes = np.atleast_2d(np.asarray(coalitions, dtype=np.int64)) @ weights
        inside = (codes[:, None] & sets[None, :]) == sets[None, :]
        return inside.astype(np.float64) @ div
    return v


def make(cls, n, seed):
    params = inspect.signature(cls.__init__).parameters
    kw = {"n": n, "random_state": seed}
    if "index" in params or "_args" in params:
        kw["index"] = "SV"
    if "max_order" in params or "_args" in params:
        kw["max_order"] = 1
    if cls.__name__ in ("kADDSHAP", "PolySHAP"):
        kw["max_order"] = 2        # their order-1 SV estimate from a 2-additive fit
    return cls(**kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--budgets", default="2,4,8,16,32,64")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--max-seconds", type=float, default=4.0)
    ap.add_argument("--exclude", default="SPEX,ProxySPEX",
                    help="approximators to skip (SPEX: abstract in 1.8; ProxySPEX: minutes "
                         "per row with its hyper-parameter search)")
    ap.add_argument("--games", default="", help="comma-separated game names (default all)")
    args = ap.parse_args()
    d = Path(args.dir)
    seeds = [int(s) for s in args.seeds.split(",")]
    budgets = [int(b) for b in args.budgets.split(",")]
    print("shapiq", shapiq.__version__, flush=True)
    exclude = set(args.exclude.split(","))
    for f in sorted(d.glob("*.npz")):
        name = f.stem
        if args.games and name not in args.games.split(","):
            continue
        z = np.load(f)
        if "tables" in z:
            tables = z["tables"]
            n_rows, P = tables.shape[0], int(round(np.log2(tables.shape[1])))
            games = [table_game(tables[r], P) for r in range(n_rows)]
        else:
            P = int(z["n_players"])
            div = z["dividends"]
            n_rows = div.shape[0]
            games = [dividend_game(z["sets"], div[r], P) for r in range(n_rows)]
        target = d / f"shapiq_{name}.json"
        index = {name: json.loads(target.read_text()) if target.exists() else {}}
        for cls in SV_APPROXIMATORS:
            aname = cls.__name__
            if aname in exclude:
                continue
            for b in budgets:
                if f"{aname}@{b}" in index[name]:
                    continue
                budget = b * P + 2
                fname = f"sq_{name}_{aname}_{b}.npy"
                if (d / fname).exists():     # an earlier, interrupted run
                    index[name][f"{aname}@{b}"] = {"file": fname, "sec_per_row": None,
                                                   "budget": b}
                    continue
                est = np.full((len(seeds), n_rows, P), np.nan)
                t0 = time.perf_counter()
                try:
                    for si, seed in enumerate(seeds):
                        for r in range(n_rows):
                            iv = make(cls, P, seed).approximate(budget=budget, game=games[r])
                            est[si, r] = iv.get_n_order_values(1)
                except Exception as e:  # noqa: BLE001 - report and skip this approximator
                    print(f"  {name} {aname} @{b}: {type(e).__name__}: {str(e)[:120]}",
                          flush=True)
                    continue
                sec = (time.perf_counter() - t0) / (len(seeds) * n_rows)
                np.save(d / fname, est)
                index[name][f"{aname}@{b}"] = {"file": fname, "sec_per_row": sec,
                                               "budget": b}
                print(f"{name} {aname} @{b}: {sec * 1e3:.1f} ms/row", flush=True)
                if sec > args.max_seconds:
                    break
            target.write_text(json.dumps(index[name], indent=1))
    return 0


if __name__ == "__main__":
    main()
