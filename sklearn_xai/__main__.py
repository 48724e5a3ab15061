"""Command line: ``python -m sklearn_xai report``, ``explain`` and ``audit``.

``report`` without arguments trains a gradient-boosting model on the bundled Adult data and
writes one self-contained HTML report; with ``--model`` and ``--data`` it explains the
user's own model. ``explain`` writes one explainer's attribution matrix as CSV or parquet.
``audit`` runs :class:`~sklearn_xai.OffManifoldAudit` on a fitted model and prints its verdict.
A ``.skops`` model file is loaded with skops (its untrusted types accepted one by one with
``--trust-type``), after its decompressed size is checked (``--max-model-size``,
``--max-model-ratio``); any other model file is unpickled, which runs code from the file, so it
needs ``--trust-model``. Errors the user can fix print one line on stderr and exit with
status 2.
"""

from __future__ import annotations

import argparse
import sys
import time

_PROG = "sklearn-xai"


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr (status 2)."""

    def error(self, message):
        self.exit(2, f"{_PROG}: error: {message} (see {self.prog} --help)\n")


def _add_common(p, *, report, audit=False):
    # the explainers offered are the registry's (sklearn_xai/_registry.py), by _cli_name
    from ._report import ATTRIBUTION_EXPLAINERS, DEFAULT_EXPLAINERS, EXPLAINERS

    # audit has no default model: --model and --data are required (doc/cli.rst), so its
    # help names no default model, --gbm or training
    p.add_argument("--model", metavar="MODEL.skops|MODEL.joblib",
                   help="a fitted scikit-learn estimator or pipeline, XGBoost or LightGBM "
                        "model (" + ("required, with --data" if audit else "needs --data")
                        + "): a .skops file saved with skops.io.dump "
                        "(recommended), or any other file is read as a joblib/pickle file "
                        "(needs --trust-model)")
    p.add_argument("--trust-model", action="store_true",
                   help="load a joblib/pickle --model file: unpickling runs code from the "
                        "file, so only load files you made or trust (prefer skops: "
                        "skops.io.dump to a .skops file). With a .skops file: accept every "
                        "type skops does not trust by default")
    p.add_argument("--trust-type", action="append", default=[], metavar="TYPE",
                   help="a type of a .skops --model file that skops does not trust by "
                        "default, accepted after you reviewed it (the error lists them); "
                        "repeat for several")
    p.add_argument("--max-model-size", type=_size, default=None, metavar="SIZE",
                   help="the most a .skops --model file may hold once decompressed, in "
                        "bytes or with a K, M or G suffix (default: 1G); a larger file is "
                        "refused before skops reads it (a zip bomb)")
    p.add_argument("--max-model-ratio", type=_positive_float, default=None, metavar="R",
                   help="the largest ratio of a .skops --model file's decompressed size to "
                        "its size on disk, checked above 1 MiB (default: 200)")
    if audit:
        p.add_argument("--data", metavar="DATA.csv|DATA.parquet",
                       help="the rows of --model's input (required): the first --background "
                            "rows fit the audit, the first --rows rows are audited")
        p.add_argument("--target", metavar="COLUMN",
                       help="the label column of --data, removed before auditing")
    else:
        p.add_argument("--data", metavar="DATA.csv|DATA.parquet",
                       help="the rows to explain, also used as background / training rows")
        p.add_argument("--target", metavar="COLUMN",
                       help="the label column of --data, removed before explaining (needed "
                            "to train the default model on --data when no --model is given)")
    if audit:
        p.add_argument("--rows", type=_positive_int, default=1000, metavar="N",
                       help="audit the first N rows of --data (default: 1000)")
        p.add_argument("--alpha", type=_probability, default=0.05, metavar="A",
                       help="family-wise level of the flag (default: 0.05)")
        p.add_argument("--out", default=None, metavar="FEATURES.csv",
                       help="also write the per-feature evidence table as CSV")
        p.add_argument("--fail-on-flag", action="store_true",
                       help="exit with status 3 when the model is flagged (for scripts)")
    elif report:
        others = [n for n in EXPLAINERS if n not in DEFAULT_EXPLAINERS]
        p.add_argument("--explainer", action="append", metavar="NAME",
                       help=f"one of {', '.join(EXPLAINERS)}; repeat for several "
                            f"(default: {', '.join(DEFAULT_EXPLAINERS)}"
                            + (f"; {', '.join(others)} only when named, as slower"
                               if others else "") + ")")
        p.add_argument("--rows", type=_positive_int, default=3, metavar="N",
                       help="rows explained in detail and rejected rows given "
                            "counterfactuals (default: 3)")
        p.add_argument("--global-rows", type=_positive_int, default=500, metavar="N",
                       help="rows behind the TreeSHAP global importance (default: 500)")
        p.add_argument("--out", default="sklearn-xai-report.html", metavar="REPORT.html",
                       help="the HTML file written (default: ./sklearn-xai-report.html)")
        p.add_argument("--immutable", action="append", default=[], metavar="COLUMN",
                       help="a feature the counterfactual explainers never change; "
                            "repeat for several "
                            "(the default Adult run fixes race, sex, native_country, "
                            "marital_status and relationship)")
        p.add_argument("--time-limit", type=float, default=0.0, metavar="SECONDS",
                       help="P2CE search seconds per rejected row, 0 for no limit (the "
                            "default: results then do not depend on the machine's speed); "
                            "a front cut short by a limit is marked partial")
        p.add_argument("--audit", action="store_true",
                       help="add the off-manifold audit section (OffManifoldAudit fitted on "
                            "the background rows, auditing the --global-rows rows; it runs "
                            "two SHAP computations, so it is left out unless asked for)")
    else:
        default = next((n for n in DEFAULT_EXPLAINERS if n in ATTRIBUTION_EXPLAINERS),
                       ATTRIBUTION_EXPLAINERS[0] if ATTRIBUTION_EXPLAINERS else None)
        p.add_argument("--explainer", default=default, metavar="NAME",
                       help=f"one of {', '.join(ATTRIBUTION_EXPLAINERS)} (default: "
                            f"{default})")
        p.add_argument("--rows", type=_positive_int, default=None, metavar="N",
                       help="explain the first N rows (default: every row of --data; 100 "
                            "rows of the Adult test split without --data)")
        p.add_argument("--out", required=True, metavar="OUT.csv|OUT.parquet",
                       help="the attribution matrix: one row per explained row, one column "
                            "per feature, plus base_value")
    p.add_argument("--background", type=_positive_int, default=5000, metavar="N",
                   help="fit the explainers on the first N rows of the data (default: 5000; "
                        "the count is stated in the output)")
    if audit:
        p.set_defaults(gbm="hgb")  # not an option: audit trains no model
    else:
        p.add_argument("--gbm", choices=("hgb", "lightgbm"), default="hgb",
                       help="the default model: scikit-learn HistGradientBoostingClassifier "
                            "(hgb, default) or LightGBM")
    p.add_argument("--threads", type=_positive_int, default=1, metavar="N",
                   help="OpenMP/BLAS threads of the models (threadpoolctl; default: 1, as "
                        "more threads often run slower on a shared machine; results do not "
                        "depend on it)")
    p.add_argument("--seed", type=_seed, default=0, metavar="N",
                   help=("random_state of the audit (OffManifoldAudit)"
                         if audit else "random_state of the default model and every seeded "
                         "explainer") + f": an integer from 0 to {_MAX_SEED} (default: 0)")
    p.add_argument("--verbose", type=int, choices=(0, 1, 2), default=1, metavar="{0,1,2}",
                   help="the explainers' own progress on stderr, besides the command's "
                        "step timings and row bars: 0 none; 1 (default) a progress bar "
                        "inside a fit that runs longer than about 2 s (e.g. the knockoff "
                        "sampler's columns); 2 also the time of each batch")
    p.add_argument("--traceback", action="store_true",
                   help="show the full traceback of an error instead of one line")


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


_SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _size(text):
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in _SIZE_UNITS else ""
    try:
        value = float(t[:len(t) - len(unit)]) * _SIZE_UNITS[unit]
    except ValueError:
        value = -1.0
    if not (value >= 1 and value < float("inf")):
        raise argparse.ArgumentTypeError(
            f"expected a size in bytes, optionally with a K, M or G suffix (e.g. 2G), "
            f"got {text!r}")
    return int(value)


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _probability(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


_MAX_SEED = 2**32 - 1  # the range scikit-learn accepts for an integer random_state


def _seed(text):
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= _MAX_SEED:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer (0 to {_MAX_SEED}), got {text!r}")
    return value


def build_parser():
    parser = _Parser(prog=_PROG, description="Explain a model with sklearn-xai.")
    sub = parser.add_subparsers(dest="command", metavar="{report,explain,audit}",
                                parser_class=_Parser)
    sub.required = True
    rep = sub.add_parser("report", help="write a self-contained HTML report",
                         description="Write a self-contained HTML report. Without --model "
                                     "and --data: a gradient-boosting model trained on the "
                                     "bundled Adult data.")
    _add_common(rep, report=True)
    exp = sub.add_parser("explain", help="write an attribution matrix (CSV or parquet)",
                         description="Write one explainer's attribution matrix as CSV or "
                                     "parquet (chosen by the --out extension).")
    _add_common(exp, report=False)
    aud = sub.add_parser("audit", help="test whether a model behaves differently on and off "
                                       "the data manifold",
                         description="Audit a fitted model with OffManifoldAudit (fitted on "
                                     "the first --background rows, auditing the first --rows "
                                     "rows): marginal versus knockoff SHAP importances and "
                                     "the model's behaviour on the hybrid rows a marginal "
                                     "explainer queries. Prints the verdict and the "
                                     "evidence.")
    _add_common(aud, report=False, audit=True)
    return parser


def _workload(args, progress):
    from ._report import ReportError, default_workload, user_workload

    if args.command == "audit" and (args.model is None or args.data is None):
        raise ReportError("audit needs --model (a fitted model) and --data (its rows)")
    if args.model is not None and args.data is None:
        raise ReportError("--model needs --data (the rows to explain)")
    if args.model is None and (args.trust_model or args.trust_type):
        flag = "--trust-model" if args.trust_model else "--trust-type"
        raise ReportError(f"{flag} applies to a --model file; none was given")
    limits = {}
    if args.max_model_size is not None:
        limits["max_model_size"] = args.max_model_size
    if args.max_model_ratio is not None:
        limits["max_model_ratio"] = args.max_model_ratio
    if limits and args.model is None:
        raise ReportError(f"--max-model-{'size' if args.max_model_size else 'ratio'} "
                          "applies to a --model file; none was given")
    if args.data is None:
        if args.target is not None:
            raise ReportError("--target needs --data")
        return default_workload(progress, seed=args.seed, gbm=args.gbm, threads=args.threads)
    return user_workload(args.model, args.data, args.target, progress, seed=args.seed,
                         gbm=args.gbm, threads=args.threads, trust_model=args.trust_model,
                         trusted_types=args.trust_type, **limits)


def _run(args):
    from ._report import (
        Progress,
        ReportError,
        build_report,
        check_explain_args,
        check_names,
        explain_matrix,
    )

    t0 = time.perf_counter()
    progress = Progress(sys.stderr, verbose=args.verbose)
    if args.command == "report":
        explicit = args.explainer is not None
        names = args.explainer or []
        check_names(names)
        workload = _workload(args, progress)
        workload.immutable = list(dict.fromkeys(workload.immutable + args.immutable))
        missing = [c for c in workload.immutable if c not in workload.X.columns]
        if missing:
            raise ReportError(f"--immutable {missing[0]!r} is not a feature of the data")
        workload.facts.append(("model threads (OpenMP/BLAS, --threads)", str(args.threads)))
        _describe(workload, progress)
        kwargs = {"explainers": names} if explicit else {}
        out = build_report(workload, args.out, progress, n_rows=args.rows,
                           n_global=args.global_rows, n_background=args.background,
                           time_limit=args.time_limit if args.time_limit > 0 else None,
                           seed=args.seed, explicit=explicit, audit=args.audit,
                           t_start=t0, **kwargs)
        sys.stderr.write(f"total {time.perf_counter() - t0:.1f} s\n")
        print(f"wrote {out.resolve()}")
        return 0
    if args.command == "audit":
        return _run_audit(args, progress, t0)
    check_explain_args(args.explainer, args.out)
    workload = _workload(args, progress)
    _describe(workload, progress)
    n_rows = args.rows if args.rows is not None or args.data is not None else 100
    out, frame = explain_matrix(workload, args.explainer, args.out, progress, n_rows=n_rows,
                                n_background=args.background, seed=args.seed)
    sys.stderr.write(f"total {time.perf_counter() - t0:.1f} s\n")
    print(f"wrote {out.resolve()} ({frame.shape[0]} rows x {frame.shape[1]} columns)")
    return 0


def _run_audit(args, progress, t0):
    from ._report import audit_workload, check_audit_out, write_audit_table

    if args.out is not None:
        check_audit_out(args.out)
    workload = _workload(args, progress)
    _describe(workload, progress)
    result, n_fit = audit_workload(workload, progress, n_rows=args.rows,
                                   n_background=args.background, seed=args.seed,
                                   alpha=args.alpha)
    print(f"audit fitted on the first {n_fit} rows of the data; {result.n_rows} rows "
          "audited")
    print(result.summary())
    if args.out is not None:
        print(f"wrote {write_audit_table(result, args.out).resolve()}")
    sys.stderr.write(f"total {time.perf_counter() - t0:.1f} s\n")
    return 3 if args.fail_on_flag and result.flagged else 0


def _describe(workload, progress):
    from ._report import printable

    # names from the user's files are escaped: a file cannot drive the terminal
    progress._write(f"model: {printable(workload.model_desc)}\n"
                    f"data: {printable(workload.data_desc)}\n")
    for note in workload.notes:
        progress._write(f"note: {printable(note)}\n")


def main(argv=None):
    """Entry point of ``sklearn-xai`` and ``python -m sklearn_xai``; returns the exit code."""
    from ._report import ReportError, printable

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        import sklearn.ensemble  # noqa: F401  (loads the OpenMP runtime, so the limit holds)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=args.threads):
            return _run(args)
    except ReportError as exc:
        if args.traceback:
            raise
        sys.stderr.write(f"{_PROG}: error: {printable(exc)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"{_PROG}: interrupted\n")
        return 130
    except Exception as exc:  # an unexpected failure: still one line unless --traceback
        if args.traceback:
            raise
        msg = printable(" ".join(str(exc).split()))
        sys.stderr.write(f"{_PROG}: error: {type(exc).__name__}: {msg} "
                         "(run again with --traceback for details)\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
