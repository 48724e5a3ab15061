"""Scale-out: TreeSHAP over 1M rows and MACE over 100k rows, in batches.

Each configuration (method, rows, batch_size, n_jobs) runs in its own subprocess so that
its peak memory is its own. The subprocess builds the data, fits the explainer, warms it up
on a few rows (numba compilation, imports), then resets the kernel's peak-RSS counter
(``/proc/self/clear_refs``; without it ``ru_maxrss`` is used, which also counts the set-up)
and explains every row with one ``explain(X)`` call. Reported:

* ``s``, ``rows/s``: wall clock of that call;
* ``peak MiB``: peak RSS during the call minus the RSS before it;
* ``result MiB``: the size of the returned object (attributions + explained rows, or the
  counterfactual frames), which has to grow with the number of rows;
* ``working MiB``: ``peak - result``, the memory the batching has to bound: it should
  depend on ``batch_size``, not on the number of rows.

Data: ``make_classification`` (10 features, seed 0). TreeSHAP explains a
``HistGradientBoostingClassifier`` (50 trees, depth 6) path-dependently; its ``n_jobs`` are
numba threads. MACE explains a ``LogisticRegression`` (index fitted on 5,000 rows,
``n_counterfactuals=1``, no refinement or post-hoc sparsity); its ``n_jobs`` are joblib
workers over batches (threads).

Usage::

    python benchmarks/bench_scale.py --quick    # TreeSHAP 100k rows, MACE 2k rows
    python benchmarks/bench_scale.py            # TreeSHAP 1M rows, MACE 100k rows
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _memory import reset_peak, status_mib  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
N_FEATURES = 10


def _nbytes_result(result):
    import numpy as np

    if hasattr(result, "counterfactuals"):
        total = 0
        for frame in (result.queries, result.counterfactuals, result.costs):
            total += int(frame.memory_usage(deep=True).sum())
        for arr in (result.predictions, result.valid, result.found, result.desired):
            total += np.asarray(arr).nbytes
        return total
    return sum(np.asarray(a).nbytes for a in (result.values, result.base_values, result.data))


def _data(n_rows, seed=0):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=max(n_rows, 20_000), n_features=N_FEATURES,
                               n_informative=6, random_state=seed)
    return X, y


def worker(config):
    """One configuration, in this process; prints a JSON line."""
    import warnings

    import numpy as np
    from sklearn.frozen import FrozenEstimator

    warnings.simplefilter("ignore")
    sys.path.insert(0, str(ROOT))
    method, n_rows, batch_size, n_jobs = (config["method"], config["rows"],
                                          config["batch_size"], config["n_jobs"])
    X, y = _data(n_rows)
    if method == "TreeSHAP":
        from sklearn.ensemble import HistGradientBoostingClassifier

        from sklearn_xai import TreeShapExplainer

        model = HistGradientBoostingClassifier(max_iter=50, max_depth=6, random_state=0)
        model.fit(X[:20_000], y[:20_000])
        exp = TreeShapExplainer(FrozenEstimator(model), batch_size=batch_size,
                                n_jobs=n_jobs).fit(X[:100])
    else:
        from sklearn.linear_model import LogisticRegression

        from sklearn_xai.recourse import MaceRecourse

        model = LogisticRegression().fit(X[:20_000], y[:20_000])
        exp = MaceRecourse(FrozenEstimator(model), n_counterfactuals=1, refine=False,
                           posthoc_sparsity=False, batch_size=batch_size, n_jobs=n_jobs,
                           random_state=0).fit(X[:5_000])
    X = np.ascontiguousarray(X[:n_rows])
    exp.explain(X[:8])  # compile / warm up
    import gc

    gc.collect()
    before = status_mib("VmRSS")
    reset = reset_peak()
    start = time.perf_counter()
    result = exp.explain(X)
    seconds = time.perf_counter() - start
    peak = status_mib("VmHWM") if reset else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = dict(config, seconds=seconds, rows_per_s=n_rows / seconds,
               peak_mib=peak - before, result_mib=_nbytes_result(result) / 2**20,
               peak_reset=reset)
    if method == "MACE":
        out["found"] = float(np.mean(result.found))
    print("RESULT " + json.dumps(out), flush=True)


def configs(quick, mace_batches=(16, 256)):
    tree_n = 100_000 if quick else 1_000_000
    mace_n = 2_000 if quick else 100_000
    out = []
    for bs in (1024, 16384):
        for n in (tree_n // 4, tree_n):
            out.append({"method": "TreeSHAP", "rows": n, "batch_size": bs, "n_jobs": 1})
        out.append({"method": "TreeSHAP", "rows": tree_n, "batch_size": bs, "n_jobs": 2})
    for bs in mace_batches:
        for n in (mace_n // 4, mace_n):
            out.append({"method": "MACE", "rows": n, "batch_size": bs, "n_jobs": 1})
    out.append({"method": "MACE", "rows": mace_n, "batch_size": 256, "n_jobs": 2})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="TreeSHAP over 100k rows and MACE over 2k rows")
    parser.add_argument("--only", choices=["TreeSHAP", "MACE"],
                        help="run the configurations of one method only")
    parser.add_argument("--mace-batch", type=int, nargs="+", default=[16, 256],
                        help="MACE batch sizes to run (default: 16 and 256)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    args = parser.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", "/tmp/numba_bench_scale")
    rows = []
    for config in configs(args.quick, tuple(args.mace_batch)):
        if args.only and config["method"] != args.only:
            continue
        proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(config)],
                              capture_output=True, text=True, env=env, check=False)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode != 0 or not line:
            print(f"failed: {config}\n{proc.stderr[-2000:]}", file=sys.stderr)
            return 1
        res = json.loads(line[0][len("RESULT "):])
        rows.append(res)
        print(f"{res['method']:8s} rows={res['rows']:>8d} batch={res['batch_size']:>6d} "
              f"n_jobs={res['n_jobs']} {res['seconds']:8.2f}s {res['rows_per_s']:10.0f} rows/s "
              f"peak {res['peak_mib']:7.1f} MiB (result {res['result_mib']:7.1f}, working "
              f"{res['peak_mib'] - res['result_mib']:6.1f})", flush=True)
    table = ["| method | rows | batch_size | n_jobs | s | rows/s | peak MiB | result MiB "
             "| working MiB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        table.append(f"| {r['method']} | {r['rows']:,} | {r['batch_size']:,} | {r['n_jobs']} "
                     f"| {r['seconds']:.2f} | {r['rows_per_s']:,.0f} | {r['peak_mib']:.1f} "
                     f"| {r['result_mib']:.1f} | {r['peak_mib'] - r['result_mib']:.1f} |")
    text = "\n".join(table)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
