"""The report behind ``python -m sklearn_xai report`` and the ``explain`` matrix writer.

:func:`build_report` explains one model with the package's explainers and writes one
self-contained HTML file (every image inlined as a base64 PNG, no external asset).
:func:`explain_matrix` writes one explainer's attribution matrix as CSV or parquet.
Both take a :class:`Workload`: the model, the data and the explained rows. Without files,
:func:`default_workload` trains a gradient-boosting model on the bundled Adult data.

Errors a user can fix (a bad file, a model that does not match the data, an unknown
explainer) are raised as :class:`ReportError` with a one-line message; the command line
prints it and exits with status 2.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import os
import shlex
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._utils import (
    booster_feature_names,
    front_estimator,
    is_lightgbm,
    lightgbm_feature_name,
    unwrap_frozen,
)

__all__ = [
    "ATTRIBUTION_EXPLAINERS",
    "DEFAULT_EXPLAINERS",
    "EXPLAINERS",
    "GLOBAL_EXPLAINERS",
    "RECOURSE_EXPLAINERS",
    "SECTION_IDS",
    "ReportError",
    "Workload",
    "build_report",
    "check_names",
    "default_workload",
    "explain_matrix",
    "report_kind",
    "user_workload",
    "audit_workload",
    "check_audit_out",
    "write_audit_table",
]

def report_kind(cls):
    """``"attribution"`` or ``"recourse"`` (from the class's base), or None: what the report
    does with explainer class ``cls`` (its comparison table, or its counterfactuals)."""
    from .base import AttributionMixin, RecourseMixin

    if issubclass(cls, AttributionMixin):
        return "attribution"
    if issubclass(cls, RecourseMixin):
        return "recourse"
    return None


def _explainer_tables():
    """Names, labels and classes of the explainers the report offers (the registry's).

    Everything the report knows about an explainer is declared on its class (see
    ``BaseExplainer``): ``_cli_name``, ``_label``, ``_in_default_report``, ``_report_params``,
    ``_report_chunk``, ``_report_global``, ``_report_exact`` and ``_report_note``; whether it
    goes in the attribution comparison or the counterfactual sections follows from its base
    class (:func:`report_kind`). A registered class with a ``_cli_name`` that is neither is
    refused by name (``_UNRUNNABLE``), never skipped.
    """
    from ._registry import explainers_by_cli_name

    classes = explainers_by_cli_name()
    attribution = tuple(n for n, c in classes.items() if report_kind(c) == "attribution")
    recourse = tuple(n for n, c in classes.items() if report_kind(c) == "recourse")
    unrunnable = tuple(n for n, c in classes.items() if report_kind(c) is None)
    default = tuple(n for n, c in classes.items() if c._in_default_report and
                    n not in unrunnable)
    labels = {n: c._label or c.__name__ for n, c in classes.items()}
    return classes, attribution, recourse, unrunnable, default, labels


(_CLASSES, ATTRIBUTION_EXPLAINERS, RECOURSE_EXPLAINERS, _UNRUNNABLE, DEFAULT_EXPLAINERS,
 _LABELS) = _explainer_tables()
EXPLAINERS = ATTRIBUTION_EXPLAINERS + RECOURSE_EXPLAINERS
#: attribution explainers whose values give the global importance and waterfall sections
#: (``_report_global = True``: TreeSHAP); the first one requested is run on more rows
GLOBAL_EXPLAINERS = tuple(n for n in ATTRIBUTION_EXPLAINERS if _CLASSES[n]._report_global)

SECTION_IDS = {
    "summary": "Model, data and row counts",
    "treeshap-global": "Global importance",
    "treeshap-waterfalls": "Waterfalls",
    "attribution-comparison": "Attribution methods side by side",
    "counterfactuals": "Counterfactuals for rejected rows",
    "pareto-scatter": "Counterfactual costs: Pareto scatter",
    "offmanifold-audit": "Off-manifold audit",
    "timings": "Timings",
}


def check_names(names, *, allowed=None, what=None):
    """Refuse (ReportError) a name that is not an explainer the report can run.

    ``allowed`` (default :data:`EXPLAINERS`) and ``what`` (how the choices are named in
    the message) narrow it, e.g. to the attribution explainers for ``explain``.
    """
    allowed = EXPLAINERS if allowed is None else allowed
    for name in names:
        if name in allowed:
            continue
        if name in _UNRUNNABLE:
            cls = _CLASSES[name]
            raise ReportError(f"the report cannot run --explainer {name} ({cls.__name__}): "
                              "it is neither an attribution nor a recourse explainer; "
                              f"choose from {', '.join(allowed)}")
        if name in EXPLAINERS and what is not None:
            raise ReportError(f"{what}: --explainer must be one of {', '.join(allowed)}, "
                              f"not {name!r}")
        raise ReportError(f"unknown explainer {name!r}; choose from {', '.join(allowed)}")


def _chunk(name, n_rows):
    """Rows per explain() call of explainer ``name`` (its ``_report_chunk``; None: all).

    The progress bar moves once per chunk; fixed sizes keep the output of a given --seed
    the same from run to run."""
    size = _CLASSES[name]._report_chunk
    return max(n_rows, 1) if size is None else int(size)


class ReportError(Exception):
    """A problem the user can fix; its message is one line, printed without a traceback."""


# ------------------------------------------------------------------------------------------
# progress and timings
# ------------------------------------------------------------------------------------------


class Progress:
    """Step timings and a text progress bar on a stream (stderr by default).

    On a terminal a step's name is shown while it runs and the bar is redrawn in place;
    otherwise only the finished steps and bars are written, so that logs stay readable.
    ``verbose`` is the explainers' own (``--verbose``): with 1 or more a fit shows its
    progress bar once it runs longer than about 2 s; with 2 the explain steps also show
    each batch's time.
    """

    def __init__(self, stream=None, width=24, verbose=0):
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.verbose = int(verbose)
        self.timings = []  # (step, seconds)
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def _write(self, text):
        self.stream.write(text)
        self.stream.flush()

    def step(self, name):
        """Context manager timing one step, then printing ``[  1.2 s] name``."""
        return _Step(self, name)

    def bar(self, name, total):
        """A progress bar of ``total`` units (rows) for a long step."""
        return _Bar(self, name, total)

    def record(self, name, seconds):
        self.timings.append((name, float(seconds)))
        self._write(f"[{seconds:7.2f} s] {name}\n")


class _Step:
    def __init__(self, progress, name):
        self.progress, self.name = progress, name

    def __enter__(self):
        self.t0 = time.perf_counter()
        if self.progress._tty:  # what runs now, replaced by its timing when it ends
            self.progress._write(f"  {self.name} ...\r")
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.progress._tty:
            self.progress._write("\r\033[K")
        if exc_type is None:
            self.progress.record(self.name, time.perf_counter() - self.t0)
        return False


class _Bar:
    def __init__(self, progress, name, total):
        self.progress, self.name, self.total = progress, name, max(int(total), 0)
        self.done = 0

    def __enter__(self):
        self.t0 = time.perf_counter()
        self._draw()
        return self

    def _line(self):
        p = self.progress
        frac = 1.0 if self.total == 0 else self.done / self.total
        filled = int(round(frac * p.width))
        return (f"  {self.name} [{'#' * filled}{'.' * (p.width - filled)}] "
                f"{self.done}/{self.total} rows {time.perf_counter() - self.t0:6.1f} s")

    def _draw(self):
        if self.progress._tty:
            self.progress._write("\r" + self._line())

    def update(self, n):
        self.done = min(self.total, self.done + int(n))
        self._draw()

    def __exit__(self, exc_type, exc, tb):
        p = self.progress
        if p._tty:
            p._write("\r" + " " * (len(self._line()) + 2) + "\r")
        else:
            p._write(self._line() + "\n")
        if exc_type is None:
            p.record(self.name, time.perf_counter() - self.t0)
        return False


# ------------------------------------------------------------------------------------------
# what is explained
# ------------------------------------------------------------------------------------------


@dataclass
class Workload:
    """A fitted model, the data it was trained on (or a sample of it) and rows to explain.

    Attributes
    ----------
    model : fitted estimator
    X : DataFrame of shape (n_background, n_features)
        Background / training rows the explainers are fitted on.
    rows : DataFrame of shape (n_rows, n_features)
        Candidate rows to explain (the first ``--rows`` of them are shown in detail).
    model_desc, data_desc : str
        One-line descriptions shown in the report and on stderr.
    notes : list of str
        Choices made on the user's behalf (dropped rows or columns), stated in the report.
    facts : list of (str, str)
        Extra lines of the report's summary table.
    immutable : list of str
        Features the counterfactual explainers never change.
    """

    model: object
    X: object
    rows: object
    model_desc: str
    data_desc: str
    notes: list = field(default_factory=list)
    facts: list = field(default_factory=list)
    immutable: list = field(default_factory=list)


def _gbm_pipeline(categorical, numeric, gbm, random_state, threads=None):
    """Ordinal-encode the categorical columns in front of a gradient-boosting classifier."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder

    encoder = ColumnTransformer(
        [("cat", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan,
                                encoded_missing_value=np.nan), list(categorical))],
        remainder="passthrough", verbose_feature_names_out=False)
    is_cat = [True] * len(categorical) + [False] * len(numeric)
    if gbm == "lightgbm":
        try:
            from lightgbm import LGBMClassifier
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ReportError("--gbm lightgbm needs LightGBM: pip install "
                              "'sklearn-xai[gbm]'") from exc
        # the ordinal codes are split on as numbers (LightGBM sees a plain array)
        # LightGBM sets its own thread count (threadpoolctl's limit does not reach it)
        clf = LGBMClassifier(n_estimators=100, num_leaves=31, learning_rate=0.1,
                             random_state=random_state, n_jobs=threads, verbose=-1)
        name = "LGBMClassifier (LightGBM, ordinal codes as numbers)"
    else:
        from sklearn.ensemble import HistGradientBoostingClassifier

        clf = HistGradientBoostingClassifier(max_iter=100, categorical_features=is_cat
                                             if any(is_cat) else None,
                                             random_state=random_state)
        name = "HistGradientBoostingClassifier (scikit-learn)"
    return Pipeline([("encode", encoder), ("gbm", clf)]), name


def default_workload(progress, *, seed=0, gbm="hgb", threads=None):
    """Train the default model on the bundled Adult data.

    Rows with a missing value are dropped first (the knockoff sampler needs complete
    rows); ``fnlwgt`` (a census sampling weight) and ``education`` (the same
    information as ``education_num``) are not used as features. The counts are stated in
    the report.
    """
    from sklearn_xai.datasets import load_adult

    with progress.step("load the bundled Adult data"):
        X, y = load_adult(subset="train")
        X_test, y_test = load_adult(subset="test")
    notes = []
    n_train, n_test = len(X), len(X_test)
    keep = X.notna().all(axis=1).to_numpy()
    keep_test = X_test.notna().all(axis=1).to_numpy()
    X, y = X[keep].reset_index(drop=True), y[keep].reset_index(drop=True)
    X_test = X_test[keep_test].reset_index(drop=True)
    y_test = y_test[keep_test].reset_index(drop=True)
    notes.append(f"Adult train split: {len(X)} of {n_train} rows kept, test split: "
                 f"{len(X_test)} of {n_test} rows kept (rows with a missing value dropped).")
    X = X.drop(columns=["fnlwgt", "education"])
    X_test = X_test[X.columns]
    notes.append("Columns fnlwgt (a census sampling weight) and education (duplicated by "
                 "education_num) are not used; 12 features remain.")
    categorical = list(X.select_dtypes("category").columns)
    numeric = [c for c in X.columns if c not in categorical]
    X = X[categorical + numeric]
    X_test = X_test[categorical + numeric]
    model, name = _gbm_pipeline(categorical, numeric, gbm, seed, threads)
    with progress.step(f"train {name} on {len(X)} rows"):
        model.fit(X, y)
    acc = float(model.score(X_test, y_test))
    model_desc = (f"Pipeline(OrdinalEncoder on {len(categorical)} categorical columns -> "
                  f"{name}), trained here on {len(X)} rows; test accuracy {acc:.3f} "
                  f"on {len(X_test)} rows")
    immutable = ["race", "sex", "native_country", "marital_status", "relationship"]
    return Workload(model=model, X=X, rows=X_test, model_desc=model_desc,
                    data_desc=(f"bundled UCI Adult (income > 50K), {X.shape[1]} features; "
                               "explained rows from the test split"),
                    notes=notes,
                    facts=[("model", model_desc),
                           ("positive class", "1 = income > 50K")],
                    immutable=immutable)


def read_table(path):
    """Read a CSV or parquet file into a DataFrame (one-line ReportError on failure)."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise ReportError(f"data file not found: {path}")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            _refuse_duplicate_header(path)
            frame = pd.read_csv(path)
        elif suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        else:
            raise ReportError(f"cannot read {path}: expected a .csv or .parquet file")
    except ReportError:
        raise
    except ImportError as exc:
        raise ReportError(f"cannot read {path}: {_one_line(exc)} "
                          "(parquet needs pyarrow: pip install pyarrow)") from exc
    except Exception as exc:  # pandas raises many parser error types
        raise ReportError(f"cannot read {path}: {_one_line(exc)}") from exc
    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise ReportError(f"{path} holds no data ({frame.shape[0]} rows, "
                          f"{frame.shape[1]} columns)")
    return frame


#: The most bytes the members of a ``.skops`` file may hold in all, decompressed
#: (``--max-model-size``).
MAX_MODEL_SIZE = 2**30
#: The largest ratio of a ``.skops`` file's decompressed size to its size on disk
#: (``--max-model-ratio``), checked for archives that decompress to more than 1 MiB.
MAX_MODEL_RATIO = 200.0
_RATIO_FLOOR = 2**20


def load_model(path, *, trust_model=False, trusted_types=(), max_size=MAX_MODEL_SIZE,
               max_ratio=MAX_MODEL_RATIO):
    """Load a fitted model from a ``.skops`` file or a trusted joblib/pickle file.

    A ``.skops`` file is read with :func:`skops.io.load`; the types skops does not trust
    by default are refused unless each is in ``trusted_types`` (or ``trust_model`` is set,
    which accepts them all). Before skops reads it, the archive's sizes are checked (a zip
    bomb is refused): its members may hold at most ``max_size`` bytes in all once
    decompressed, at most ``max_ratio`` times the file's size (checked above 1 MiB), and
    a member compressed with bzip2 or LZMA is decompressed here, up to those limits, to
    check that it holds no more than it declares. Any other file is a joblib/pickle file:
    unpickling runs code from the file, so it is only opened when ``trust_model`` is set.

    Raises
    ------
    ReportError
        With a one-line message, on any failure.
    """
    path = Path(path)
    if not path.is_file():
        raise ReportError(f"model file not found: {path}")
    trusted_types = list(dict.fromkeys(trusted_types))
    if path.suffix.lower() == ".skops":
        model = _load_skops(path, trust_model, trusted_types, max_size, max_ratio)
    else:
        if trusted_types:
            raise ReportError(f"--trust-type applies to .skops model files, not {path.name}")
        if not trust_model:
            raise ReportError(
                f"{path} is read as a joblib/pickle file, and unpickling runs code from the "
                "file: pass --trust-model only if you made this file or trust its source, "
                "or save the model with skops.io.dump to a .skops file (recommended)")
        import joblib

        try:
            model = joblib.load(path)
        except Exception as exc:  # unpickling raises arbitrary errors
            raise ReportError(f"cannot load model from {path} with joblib: "
                              f"{type(exc).__name__}: {_one_line(exc)}") from exc
    if not (hasattr(model, "predict") or hasattr(model, "predict_proba")):
        raise ReportError(f"{path} holds a {type(model).__name__}, not a fitted model "
                          "with predict or predict_proba")
    return model


class _RefuseModules:
    """An import hook that refuses the modules ``names`` (an ImportError), as if they
    were not installed."""

    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, name, path=None, target=None):
        if name in self.names:
            raise ImportError(f"{name} is not loaded while skops.io is imported")
        return None


#: scikit-learn's adapters of array libraries that ``import skops.io`` would load
_ARRAY_API_BACKENDS = tuple(f"sklearn.externals.array_api_compat.{lib}"
                            for lib in ("torch", "dask", "cupy"))


def import_skops_io():
    """``skops.io``, imported without loading torch, Dask or CuPy.

    On import, skops lists scikit-learn's estimators (``sklearn.utils.all_estimators``),
    whose walk over scikit-learn's packages imports each of them, the array-API adapters
    of torch, Dask and CuPy included, and so those libraries (torch alone took 2-3 s of
    a 6 s import). The list leaves the adapters out anyway; they are refused while
    skops.io is imported (the walk skips a package that fails to import), and import as
    usual afterwards. When skops.io is already imported it is returned as it is.

    Raises
    ------
    ImportError
        When skops is not installed.
    """
    if sys.modules.get("skops.io") is not None:
        return sys.modules["skops.io"]
    hook = _RefuseModules(m for m in _ARRAY_API_BACKENDS if m not in sys.modules)
    sys.meta_path.insert(0, hook)
    try:
        import skops.io as sio
    finally:
        sys.meta_path.remove(hook)
    return sio


def _load_skops(path, trust_model, trusted_types, max_size=None, max_ratio=None):
    try:
        sio = import_skops_io()
    except ImportError as exc:
        raise ReportError(f"reading {path.name} needs skops: pip install skops "
                          "(or the sklearn-xai[cli] extra)") from exc
    check_archive_size(path, MAX_MODEL_SIZE if max_size is None else max_size,
                       MAX_MODEL_RATIO if max_ratio is None else max_ratio)
    try:
        untrusted = list(sio.get_untrusted_types(file=path))
    except Exception as exc:  # not a skops archive
        raise ReportError(f"cannot load model from {path} with skops: "
                          f"{type(exc).__name__}: {_one_line(exc)}") from exc
    refused = [t for t in untrusted if t not in trusted_types]
    if refused and not trust_model:
        # the names come from the file: shown escaped, and shell-quoted in the command
        plain = [t for t in refused if t.isprintable()]
        hostile = [t for t in refused if not t.isprintable()]
        how = ("review them, then accept each with "
               + " ".join(f"--trust-type {shlex.quote(t)}" for t in plain)) if plain else ""
        if hostile:
            how += ("; " if how else "") + (
                f"{len(hostile)} of these names hold control characters (shown escaped), "
                "which no Python type name has: this file was made to mislead, do not "
                "trust it")
        raise ReportError(
            f"{path} holds types skops does not trust by default: "
            f"{', '.join(_shown_name(t) for t in refused)}; {how} (or accept all of them "
            "with --trust-model, only for a file you made or trust)")
    try:
        return sio.load(path, trusted=untrusted)
    except Exception as exc:
        raise ReportError(f"cannot load model from {path} with skops: "
                          f"{type(exc).__name__}: {_one_line(exc)}") from exc


def _size_text(n):
    for unit, k in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= k:
            return f"{n / k:.4g} {unit}"
    return f"{n} bytes"


def check_archive_size(path, max_size=MAX_MODEL_SIZE, max_ratio=MAX_MODEL_RATIO):
    """Refuse a zip archive (a ``.skops`` file) that would decompress to too much.

    The declared (central directory) sizes are checked against ``max_size`` in all and
    ``max_ratio`` times the file's size. Python's zipfile stops a stored or deflated
    member at its declared size (a lying member then fails its CRC check), but not a bzip2
    or LZMA one, so those are decompressed here, in bounded steps, and refused when they
    hold more than they declare.
    """
    import zipfile

    path = Path(path)
    hint = "(raise the limit with --max-model-size / --max-model-ratio for a file you trust)"
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ReportError(f"cannot load model from {path} with skops: not a skops (zip) "
                          f"file: {_one_line(exc)}") from exc
    total = sum(i.file_size for i in infos)
    on_disk = max(path.stat().st_size, 1)
    if total > max_size:
        raise ReportError(f"{path} declares {_size_text(total)} once decompressed, above "
                          f"the limit of {_size_text(max_size)} {hint}")
    if total > _RATIO_FLOOR and total / on_disk > max_ratio:
        raise ReportError(f"{path} declares {_size_text(total)} once decompressed from "
                          f"{_size_text(on_disk)}, a ratio of {total / on_disk:.0f}:1 above "
                          f"the limit of {max_ratio:g}:1 (a zip bomb?) {hint}")
    budget = max_size
    for info in infos:
        if info.compress_type in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
            actual = _decompressed_size(path, info, min(info.file_size, budget) + 1)
            if actual > info.file_size:
                raise ReportError(f"{path}: member {_shown_name(info.filename)} holds more "
                                  f"than the {info.file_size} bytes it declares (a zip "
                                  "bomb?); refused")
            budget -= actual
        elif info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ReportError(f"{path}: member {_shown_name(info.filename)} uses zip "
                              f"compression method {info.compress_type}, which skops files "
                              "do not use; refused")


def _decompressed_size(path, info, limit):
    """Bytes a bzip2 or LZMA member decompresses to, counted up to ``limit``."""
    import bz2
    import lzma
    import struct
    import zipfile

    with open(path, "rb") as f:
        f.seek(info.header_offset)
        header = f.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise ReportError(f"{path}: member {_shown_name(info.filename)} has no local "
                              "header; not a valid zip file")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        f.seek(name_len + extra_len, 1)
        left = info.compress_size
        if info.compress_type == zipfile.ZIP_BZIP2:
            dec = bz2.BZ2Decompressor()
        else:  # zip's LZMA: version (2 bytes), properties size (2 bytes), properties
            head = f.read(4)
            (psize,) = struct.unpack("<H", head[2:4])
            props = f.read(psize)
            left -= 4 + psize
            try:
                filt = lzma._decode_filter_properties(lzma.FILTER_LZMA1, props)
                dec = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[filt])
            except (lzma.LZMAError, ValueError) as exc:
                raise ReportError(f"{path}: member {_shown_name(info.filename)} is not "
                                  "valid LZMA data") from exc
        out = 0
        chunk = b""
        try:
            while out < limit:
                if dec.needs_input:
                    if left <= 0:
                        break
                    chunk = f.read(min(left, 1 << 16))
                    if not chunk:
                        break
                    left -= len(chunk)
                else:
                    chunk = b""
                out += len(dec.decompress(chunk, max_length=min(1 << 20, limit - out)))
                if dec.eof:
                    break
        except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
            raise ReportError(f"{path}: member {_shown_name(info.filename)} is not valid "
                              f"compressed data: {_one_line(exc)}") from exc
    return out


def _shown_name(name):
    """A name taken from a file, as printed: as is, or escaped (quoted) when it holds a
    character that is not printable (a terminal control sequence)."""
    name = str(name)
    return name if name.isprintable() else repr(name)


def printable(text):
    """``text`` with every non-printable character (an escape sequence, a carriage return)
    written as its Python escape, so that a file cannot drive the terminal."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _refuse_duplicate_header(path):
    """A CSV header naming a column twice is an error (pandas would rename the second
    ``name.1`` and the first would be taken silently)."""
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
            header = next((row for row in csv.reader(f) if row), None)
    except (OSError, csv.Error):
        return  # pandas reports what is wrong with the file
    if not header:
        return
    seen, dups = set(), []
    for name in header:
        if name in seen and name not in dups and name.strip():
            dups.append(name)
        seen.add(name)
    if dups:
        what = "a column" if len(dups) == 1 else "columns"
        raise ReportError(f"the header of {path} names {what} more than once: "
                          f"{', '.join(repr(d) for d in dups)}; give every column its own "
                          "name (the first would be taken and the others renamed)")


def _model_columns(model):
    """Input column names the model was fitted on, or None; and its input width or None.

    Only a ``FrozenEstimator`` is unwrapped: a forest, bagging or boosting ensemble (and
    ``CalibratedClassifierCV``) also has an ``estimator`` attribute, its unfitted template,
    which knows nothing of the fitted model's features.
    """
    inner = unwrap_frozen(model)
    names = getattr(inner, "feature_names_in_", None)
    if names is None:
        booster = getattr(inner, "booster_", None)  # LightGBM sklearn API
        if booster is not None and hasattr(booster, "feature_name"):
            names = booster_feature_names(booster)
        if names is None and hasattr(inner, "get_booster"):  # XGBoost sklearn API
            try:
                names = booster_feature_names(inner.get_booster())
            except Exception:
                names = None
    width = getattr(inner, "n_features_in_", None)
    return (None if names is None else [str(n) for n in names]), width


def user_workload(model_path, data_path, target, progress, *, seed=0, gbm="hgb", threads=None,
                  trust_model=False, trusted_types=(), max_model_size=MAX_MODEL_SIZE,
                  max_model_ratio=MAX_MODEL_RATIO):
    """Load the user's model and data (or train the default model on the user's data).

    Every check runs before anything is printed, so that a bad input gives exactly one
    line on stderr. ``trust_model``, ``trusted_types``, ``max_model_size`` and
    ``max_model_ratio`` are passed to :func:`load_model`.
    """
    timings = []
    t0 = time.perf_counter()
    frame = read_table(data_path)
    timings.append((f"read {data_path}", time.perf_counter() - t0))
    y = None
    if target is not None:
        if target not in frame.columns:
            raise ReportError(f"--target {target!r} is not a column of {data_path} "
                              f"(columns: {_short_list(frame.columns)})")
        y = frame[target]
        frame = frame.drop(columns=[target])
    notes = []
    if model_path is None:
        if y is None:
            raise ReportError("--data without --model trains the default model and needs "
                              "--target COLUMN")
        import pandas as pd

        complete = frame.notna().all(axis=1).to_numpy() & y.notna().to_numpy()
        if not complete.all():
            # the index is kept: it is the file's row (the ``row`` column of ``explain``)
            notes.append(f"{int((~complete).sum())} of {len(frame)} rows with a missing value "
                         "dropped before training (the others keep their row numbers in "
                         f"{Path(data_path).name}).")
            frame, y = frame[complete], y[complete]
        for c in frame.columns:
            if not pd.api.types.is_numeric_dtype(frame[c].dtype):
                frame[c] = frame[c].astype("category")
        categorical = list(frame.select_dtypes("category").columns)
        numeric = [c for c in frame.columns if c not in categorical]
        frame = frame[categorical + numeric]
        model, name = _gbm_pipeline(categorical, numeric, gbm, seed, threads)
        t0 = time.perf_counter()
        try:
            model.fit(frame, y)
        except Exception as exc:
            raise ReportError(f"cannot train the default model on {data_path}: "
                              f"{_one_line(exc)}") from exc
        timings.append((f"train {name} on {len(frame)} rows", time.perf_counter() - t0))
        model_desc = (f"Pipeline(OrdinalEncoder -> {name}), trained here on {len(frame)} "
                      f"rows of {Path(data_path).name} to predict {target!r}")
    else:
        t0 = time.perf_counter()
        # the first .skops file also imports skops.io (about 1 s), which the step says
        imports = Path(model_path).suffix.lower() == ".skops" and \
            sys.modules.get("skops.io") is None
        model = load_model(model_path, trust_model=trust_model,
                           trusted_types=trusted_types, max_size=max_model_size,
                           max_ratio=max_model_ratio)
        timings.append((f"{'import skops + ' if imports else ''}load {model_path}",
                        time.perf_counter() - t0))
        frame = _match_columns(model, frame, model_path, data_path, notes)
        model_desc = f"{_model_name(model)} loaded from {Path(model_path).name}"
    _check_predicts(model, frame, model_path, data_path)
    for step, seconds in timings:
        progress.record(step, seconds)
    data_desc = f"{Path(data_path).name}: {frame.shape[0]} rows, {frame.shape[1]} features"
    if target is not None:
        data_desc += f", target {target!r}"
    return Workload(model=model, X=frame, rows=frame, model_desc=model_desc,
                    data_desc=data_desc, notes=notes, facts=[("model", model_desc)])


def _match_columns(model, frame, model_path, data_path, notes):
    """The model's input columns of ``frame``, checked by name, or by count without names.

    Columns named like the model's features must be in the model's order: a reordered or
    renamed file is an error, not a guess. Extra columns are left out with a note. A model
    without feature names takes the columns by position, which is stated in a note. The
    columns of a LightGBM or XGBoost model's categorical features are then given the
    model's categories (:func:`_as_model_categories`).
    """
    names, width = _model_columns(model)
    if names is not None and is_lightgbm(model):
        frame = _lightgbm_columns(frame, names, model_path, data_path, notes)
    if names is not None:
        missing = [n for n in names if n not in frame.columns]
        if missing:
            raise ReportError(f"the model in {model_path} expects columns missing from "
                              f"{data_path}: {_short_list(missing)}")
        present = [c for c in frame.columns if c in names]
        if present != names:
            k = next((i for i, (a, b) in enumerate(zip(names, present)) if a != b), None)
            where = ("" if k is None else
                     f" (position {k}: {names[k]!r} expected, {present[k]!r} found)")
            raise ReportError(
                f"the columns of {data_path} are not in the order the model in {model_path} "
                f"was fitted on: it expects {_short_list(names)} but the file has "
                f"{_short_list(present)}{where}; put the file's columns in the model's order")
        extra = [c for c in frame.columns if c not in names]
        if extra:
            notes.append(f"Columns not used by the model were left out: {_short_list(extra)}.")
        return _as_model_categories(model, frame[names], model_path, data_path, notes)
    if width is not None and width != frame.shape[1]:
        raise ReportError(f"the model in {model_path} takes {width} features but {data_path} "
                          f"has {frame.shape[1]} columns (after removing the target)")
    notes.append(f"The model in {Path(model_path).name} has no feature names, so its order "
                 f"cannot be checked: the {frame.shape[1]} columns of {Path(data_path).name} "
                 f"are taken by position, in the file's order ({_short_list(frame.columns)}); "
                 "they must be in the order the model was trained on.")
    return _as_model_categories(model, frame, model_path, data_path, notes)


def _as_model_categories(model, frame, model_path, data_path, notes):
    """``frame`` with the columns of the model's categorical features given the model's own
    categories, in the model's order (``pd.CategoricalDtype``).

    A CSV file has no category dtype: the columns of a LightGBM or XGBoost model fitted on
    pandas ``category`` columns come back as text (or numbers), which neither library
    predicts on. The categories are the model's (:func:`_lightgbm_categories`,
    :func:`_xgboost_categories`); ``frame``'s column ``i`` is the model's feature ``i``.
    A value is matched with a category by its text, numbers written as the CSV reader reads
    them (the category ``1`` or ``"1"`` matches a cell ``1``, and ``1.0`` of a column
    holding an empty cell). A missing cell stays missing. A value that is none of the
    model's categories is an error naming the column and the values: LightGBM would treat
    it as missing and XGBoost would not, so it is not guessed.
    """
    import pandas as pd

    front = front_estimator(model)
    library = type(front).__module__.split(".")[0]
    if library == "lightgbm":
        categories = _lightgbm_categories(front, frame, model_path, data_path)
    elif library == "xgboost":
        categories = _xgboost_categories(front, frame, model_path, data_path)
    else:
        return frame
    if not categories:
        return frame
    frame = frame.copy(deep=False)
    cast = []
    for i, cats in categories.items():
        column = frame.iloc[:, i]
        codes = _category_codes(column, cats, frame.columns[i], model_path, data_path)
        if not isinstance(column.dtype, pd.CategoricalDtype):
            cast.append(frame.columns[i])
        frame.isetitem(i, pd.Series(pd.Categorical.from_codes(
            codes, dtype=pd.CategoricalDtype(pd.Index(cats))), index=frame.index))
    if cast:
        notes.append("These columns were given the categories the model was fitted on (in "
                     f"its order) to match its categorical features: {_short_list(cast)}.")
    return frame


def _category_key(value):
    """The text a category and a cell are matched by: numbers as the CSV reader reads them."""
    import numbers

    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def _category_codes(column, cats, name, model_path, data_path):
    """The codes of ``column``'s values among ``cats`` (-1 for a missing value)."""
    import pandas as pd

    key = _category_key
    keys = [key(c) for c in cats]
    if len(set(keys)) < len(keys):  # e.g. both 1 and "1": match the values themselves
        key = None
        keys = list(cats)
    where = {k: j for j, k in enumerate(keys)}
    values = column.astype(object) if isinstance(column.dtype, pd.CategoricalDtype) else column
    inverse, uniques = pd.factorize(values)
    found = np.array([where.get(u if key is None else key(u), -1) for u in uniques] + [-1],
                     dtype=np.int64)
    unseen = [u for u, f in zip(uniques, found) if f < 0]
    if unseen:
        rows = int(np.isin(inverse, np.flatnonzero(found[:-1] < 0)).sum())
        hint = ""
        if pd.api.types.is_numeric_dtype(column.dtype) and \
                any(isinstance(c, str) for c in cats):
            hint = (" (the CSV reader read the column as numbers, so a label such as '01' "
                    "lost its zero: give the data as parquet with the column as text)")
        raise ReportError(
            f"column {name!r} of {data_path} holds values that are not categories of the "
            f"model in {model_path}: {_short_list(repr(v) for v in unseen)} "
            f"({rows} row{'s' if rows != 1 else ''}){hint}; its categories are "
            f"{_short_list(repr(c) for c in cats)}. Correct those values, or leave the cells "
            "empty to explain them as missing values")
    return found[inverse]  # inverse -1 (missing) takes the trailing -1


def _lightgbm_categories(est, frame, model_path, data_path):
    """{feature position: categories} of a LightGBM scikit-learn model fitted on pandas
    ``category`` columns, or {}.

    LightGBM keeps the categories of the frame's category columns, in column order, in
    ``booster_.pandas_categorical``, and the positions of its categorical features in the
    ``categorical_column`` parameter (``categorical_feature`` for a booster loaded from a
    model file). When the two do not have the same length (an ordered category column,
    which LightGBM codes as a number, or ``categorical_feature`` given by hand) the columns
    cannot be told apart: a frame already holding that many category columns (parquet) is
    left to LightGBM, any other is an error.
    """
    import pandas as pd

    from .tree._parse_lightgbm import lightgbm_categories

    try:
        booster = est.booster_
        pandas_categorical = lightgbm_categories(est)
    except Exception:  # not fitted, or not a LightGBM scikit-learn model
        return {}
    if not pandas_categorical:
        return {}
    params = getattr(booster, "params", None) or {}
    columns = params.get("categorical_column", params.get("categorical_feature"))
    if isinstance(columns, str):
        columns = [c for c in columns.split(",") if c]
    names = list(booster.feature_name())
    positions = []
    for c in columns or ():
        text = str(c)
        if text.lstrip("-").isdigit():
            positions.append(int(text))
        elif text.removeprefix("name:") in names:
            positions.append(names.index(text.removeprefix("name:")))
    positions = sorted(set(positions))
    if len(positions) == len(pandas_categorical) and \
            all(0 <= p < frame.shape[1] for p in positions):
        return {p: list(cats) for p, cats in zip(positions, pandas_categorical)}
    n_category = sum(isinstance(t, pd.CategoricalDtype) for t in frame.dtypes)
    if n_category == len(pandas_categorical):
        return {}
    raise ReportError(
        f"the LightGBM model in {model_path} was fitted on {len(pandas_categorical)} pandas "
        f"category columns but names {len(positions)} categorical features (an ordered "
        "category, or categorical_feature given by hand), so the columns of "
        f"{data_path} cannot be given its categories; give the data as parquet with "
        "those columns of dtype category")


def _xgboost_categories(est, frame, model_path, data_path):
    """{feature position: categories} of an XGBoost scikit-learn model with categorical
    features (``feature_types`` ``'c'``), or {}.

    XGBoost 3.1 and later store the categories of a pandas frame in the booster
    (``get_booster().get_categories()``) and re-code a frame's categories to them when
    predicting. A model that does not store them (fitted on codes, or with an older
    XGBoost) takes its columns as they are: numbers (codes), or a parquet file's category
    columns; a text column is an error.
    """
    import pandas as pd

    try:
        booster = est.get_booster()
    except Exception:
        return {}
    types = list(getattr(booster, "feature_types", None) or ())
    positions = [i for i, t in enumerate(types) if t == "c" and i < frame.shape[1]]
    if not positions:
        return {}
    try:
        arrays = booster.get_categories(export_to_arrow=True).to_arrow()
    except ImportError as exc:
        raise ReportError(f"reading the categories of the XGBoost model in {model_path} "
                          "needs pyarrow: pip install pyarrow") from exc
    except Exception:  # XGBoost < 3.1 has no get_categories
        arrays = None
    categories = {}
    for i in positions:
        values = arrays[i][1] if arrays is not None and i < len(arrays) else None
        if values is not None:
            categories[i] = values.to_pylist()
    # codes (numbers) and category columns go to XGBoost as they are; text cannot
    unknown = [frame.columns[i] for i in positions if i not in categories
               and not isinstance(frame.dtypes.iloc[i], pd.CategoricalDtype)
               and not pd.api.types.is_numeric_dtype(frame.dtypes.iloc[i])]
    if unknown:
        raise ReportError(
            f"the XGBoost model in {model_path} does not store the categories of its "
            f"categorical features (fitted with XGBoost < 3.1), and {data_path} holds them "
            f"as text: {_short_list(unknown)}; give the data as parquet with those columns "
            "of dtype category, as the model was fitted")
    return categories


def _lightgbm_columns(frame, names, model_path, data_path, notes):
    """``frame`` with each column LightGBM renamed (a space made ``_``) under the model's name.

    LightGBM keeps the renamed names in ``feature_names_in_`` and predicts on the original
    frame; the explainers compare the frame's columns with those names, so the columns are
    renamed here, with a note. A column is renamed only when no column has the model's name
    already, and two columns that both become the same name are an error, not a guess.
    """
    wanted = set(names)
    renames = {}
    for name in names:
        if name in frame.columns:
            continue
        cands = [c for c in frame.columns if c not in wanted and lightgbm_feature_name(c) == name]
        if len(cands) > 1:
            raise ReportError(
                f"the LightGBM model in {model_path} has feature {name!r}, and LightGBM gives "
                f"that name to several columns of {data_path} (a space becomes '_'): "
                f"{_short_list(repr(c) for c in cands)}; keep only the one it was fitted on")
        if cands:
            renames[cands[0]] = name
    if not renames:
        return frame
    notes.append("LightGBM replaces each space in a feature name with '_'; these columns "
                 "are used under the model's names: " +
                 _short_list(f"{c!r} as {n!r}" for c, n in renames.items()) + ".")
    return frame.rename(columns=renames)


def _check_predicts(model, frame, model_path, data_path):
    method = "predict_proba" if hasattr(model, "predict_proba") else "predict"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(model, method)(frame.iloc[:5])
    except Exception as exc:
        where = f"the model in {model_path}" if model_path else "the model"
        raise ReportError(f"{where} cannot predict on {data_path}: {type(exc).__name__}: "
                          f"{_one_line(exc)}") from exc


def _model_name(model):
    from sklearn.pipeline import Pipeline

    if isinstance(model, Pipeline):
        return "Pipeline(" + " -> ".join(type(s).__name__ for _, s in model.steps) + ")"
    return type(model).__name__


def _one_line(exc):
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def _short_list(items, k=8):
    items = [str(i) for i in items]
    more = f", ... ({len(items)} in all)" if len(items) > k else ""
    return ", ".join(items[:k]) + more


# ------------------------------------------------------------------------------------------
# running the explainers
# ------------------------------------------------------------------------------------------


def _is_classifier(model):
    return hasattr(model, "predict_proba") and hasattr(model, "classes_")


def make_explainer(name, model, X, *, seed, immutable=None, time_limit=None, verbose=0):
    """A fitted explainer ``name`` for the frozen ``model`` (ReportError if it cannot).

    ``immutable`` (column names) is passed to MACE and P2CE; ``time_limit`` (seconds per
    query) to P2CE; ``verbose`` to every explainer that has it (the progress of its fit).
    """
    immutable = [c for c in (immutable or []) if c in X.columns] or None
    from sklearn.frozen import FrozenEstimator

    frozen = FrozenEstimator(model)
    if name in RECOURSE_EXPLAINERS and not _is_classifier(model):
        raise ReportError(f"--explainer {name} needs a classifier with predict_proba; "
                          f"{_model_name(model)} has none")
    check_names([name])
    cls = _CLASSES[name]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            params = cls._report_params(model, seed=seed, immutable=immutable,
                                        time_limit=time_limit)
            if "verbose" in cls._get_param_names():
                params["verbose"] = verbose
            return cls(frozen, **params).fit(X)
    except ReportError:
        raise
    except Exception as exc:
        raise ReportError(f"{_LABELS[name]} cannot explain {_model_name(model)}: "
                          f"{type(exc).__name__}: {_one_line(exc)}") from exc


def _desired_class(model):
    return model.classes_[-1]


def _run_chunks(name, explainer, rows, progress, label):
    """Explain ``rows`` in fixed chunks under a progress bar; returns the list of results."""
    out = []
    size = _chunk(name, len(rows))
    with progress.bar(label, len(rows)) as bar:
        for start in range(0, len(rows), size):
            part = rows.iloc[start:start + size]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    out.append(explainer.explain(part))
                except Exception as exc:
                    raise ReportError(f"{_LABELS[name]} failed on rows {start}.."
                                      f"{start + len(part) - 1}: {type(exc).__name__}: "
                                      f"{_one_line(exc)}") from exc
            bar.update(len(part))
    return out


def _concat_attributions(parts):
    from sklearn_xai._explanation import Attribution

    first = parts[0]
    return Attribution(values=np.concatenate([p.values for p in parts]),
                       base_values=np.concatenate([p.base_values for p in parts]),
                       data=np.concatenate([np.asarray(p.data, dtype=object) for p in parts]),
                       feature_names=list(first.feature_names),
                       output_names=list(first.output_names),
                       std=None if any(p.std is None for p in parts)
                       else np.concatenate([p.std for p in parts]),
                       std_dof=None if any(p.std is None for p in parts)
                       or all(p.std_dof is None for p in parts) else np.concatenate(
                           [np.full(p.std.shape, np.inf) if p.std_dof is None else p.std_dof
                            for p in parts]))


def explain_rows(name, model, X, rows, progress, *, seed, immutable=None, time_limit=None):
    """Fit explainer ``name`` on ``X`` and explain ``rows``; Attribution or list of parts."""
    with progress.step(f"fit {_LABELS[name]} on {len(X)} rows"):
        explainer = make_explainer(name, model, X, seed=seed, immutable=immutable,
                                   time_limit=time_limit, verbose=progress.verbose)
    if progress.verbose < 2 and "verbose" in explainer.get_params():
        explainer.set_params(verbose=0)  # the command's own bar counts the explained rows
    parts = _run_chunks(name, explainer, rows, progress,
                        f"{_LABELS[name]} on {len(rows)} rows")
    if name not in ATTRIBUTION_EXPLAINERS:
        return parts
    att = _concat_attributions(parts)
    names = [str(f) for f in att.feature_names]
    if all(f in rows.columns for f in names):
        # a Pipeline's encoded columns keep the user's names: show the user's values
        att.data = rows[names].to_numpy(dtype=object)
    if not _CLASSES[name]._report_exact:
        try:  # the model's own output in the explained space (SHEAR need not add up to it)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                att.extras["model_output"] = np.asarray(explainer.model_fn_(rows),
                                                        dtype=np.float64)
        except Exception:  # only shown when available
            pass
    return att


def check_explain_args(explainer, out):
    """Check the explainer and output file of ``explain`` (before any work is done)."""
    check_names([explainer], allowed=ATTRIBUTION_EXPLAINERS, what="explain writes attributions")
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise ReportError(f"--out {out}: expected a .csv or .parquet file name")
    return out, suffix


def explain_matrix(workload, explainer, out, progress, *, n_rows=None, n_background=None,
                   seed=0):
    """Write the attribution matrix of ``explainer`` on the workload's rows to ``out``.

    The file has one row per explained row, a ``base_value:<output>`` column per explained
    output (named as in every explainer, e.g. ``margin(1)``) and one column per player
    (``feature``, or ``output:feature`` with several outputs), in CSV or parquet by the
    file extension.
    The explainer is fitted on the first ``n_background`` rows of ``workload.X``
    (``None``: all). The index column, ``row``, is the explained row's label in
    ``workload.rows`` (its row in the user's file); it is named ``_row`` when a column of
    the matrix is named ``row`` (:func:`index_name`).
    """
    out, suffix = check_explain_args(explainer, out)
    rows = workload.rows if n_rows is None else workload.rows.iloc[:n_rows]
    X = workload.X if n_background is None else workload.X.iloc[:n_background]
    att = explain_rows(explainer, workload.model, X, rows, progress, seed=seed)
    frame = att.to_frame()
    if att.n_outputs > 1:
        frame.columns = [f"{o}:{f}" for o, f in frame.columns]
    base = att.base_values
    if base.ndim == 1:  # the column's name says which output the file holds
        frame.insert(0, f"base_value:{att.output_names[0]}", base)
    else:
        for k, o in enumerate(att.output_names):
            frame.insert(k, f"base_value:{o}", base[:, k])
    frame.index = rows.index
    frame.index.name = index_name(frame.columns)
    if frame.index.name != "row":
        progress._write(f"note: a column of the matrix is named 'row', so the index column "
                        f"(the file's row) is named {frame.index.name!r}\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        if suffix == ".csv":
            # text quoted, numbers not; text that a spreadsheet would run as a formula is
            # escaped
            _spreadsheet_safe(frame).to_csv(out, quoting=csv.QUOTE_NONNUMERIC)
        else:
            frame.to_parquet(out)
    except ImportError as exc:
        raise ReportError(f"cannot write {out}: {_one_line(exc)} "
                          "(parquet needs pyarrow: pip install pyarrow)") from exc
    except OSError as exc:
        raise ReportError(f"cannot write {out}: {_one_line(exc)}") from exc
    return out, frame


def index_name(columns):
    """The name of the index column of the written matrix: ``row``, or ``_row`` (``__row``,
    ...) when the matrix already has a column of that name (a feature named ``row``)."""
    columns = {str(c) for c in columns}
    name = "row"
    while name in columns:
        name = "_" + name
    return name


def audit_workload(workload, progress, *, n_rows=1000, n_background=None, seed=0,
                   alpha=0.05):
    """Fit :class:`~sklearn_xai.OffManifoldAudit` on the first ``n_background`` rows of
    ``workload.X`` (``None``: all) and audit the first ``n_rows`` rows of
    ``workload.rows``; returns ``(AuditResult, number of rows fitted on)``.

    A ValueError or TypeError of the audit (missing values a knockoff sampler cannot
    take, a model that cannot be called on the rows) is a ReportError.
    """
    from .audit import OffManifoldAudit

    X = workload.X if n_background is None else workload.X.iloc[:n_background]
    rows = workload.rows.iloc[:n_rows]
    try:
        with progress.step(f"fit the off-manifold audit on {len(X)} rows"):
            audit = OffManifoldAudit(alpha=alpha, random_state=seed).fit(X)
        with progress.step(f"audit {len(rows)} rows"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = audit.audit(workload.model, rows)
    except (ValueError, TypeError) as exc:
        raise ReportError(f"cannot audit the model: {_one_line(exc)}") from exc
    return result, len(X)


def check_audit_out(out):
    """The ``--out`` of ``audit``: a .csv file name (checked before any work is done)."""
    out = Path(out)
    if out.suffix.lower() != ".csv":
        raise ReportError(f"--out {out}: expected a .csv file name")
    return out


def write_audit_table(result, out):
    """Write the per-feature table of an :class:`~sklearn_xai.AuditResult` as CSV."""
    out = check_audit_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        _spreadsheet_safe(result.features).to_csv(out, quoting=csv.QUOTE_NONNUMERIC)
    except OSError as exc:
        raise ReportError(f"cannot write {out}: {_one_line(exc)}") from exc
    return out


# Text a spreadsheet reads as a formula (OWASP, CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _safe_text(value):
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _spreadsheet_safe(frame):
    """A copy of ``frame`` whose text labels and cells are escaped with a leading ``'``
    where a spreadsheet would run them as a formula; numbers are left as they are."""
    import pandas as pd

    frame = frame.copy()
    frame.columns = frame.columns.map(_safe_text)
    frame.index = frame.index.map(_safe_text)
    frame.index.names = [_safe_text(n) for n in frame.index.names]
    for j in range(frame.shape[1]):
        col = frame.iloc[:, j]
        if not pd.api.types.is_numeric_dtype(col.dtype):
            frame.isetitem(j, col.map(_safe_text))
    return frame


# ------------------------------------------------------------------------------------------
# figures and HTML
# ------------------------------------------------------------------------------------------


def _png(fig, title=None):
    """A matplotlib figure as an inline ``<img>`` (base64 PNG); the figure is closed.
    ``title``: the image's tooltip (e.g. labels the figure had to shorten)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    tip = f' title="{_esc(title)}"' if title else ""
    return f'<img alt="figure"{tip} src="data:image/png;base64,{data}">'


def _esc(value):
    return html.escape(str(value))


def _fmt(v):
    if isinstance(v, float | np.floating):
        return f"{float(v):.4g}"
    return str(v)


def _table(header, rows, cls=None):
    cls = f' class="{cls}"' if cls else ""
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _section(sid, inner):
    return f'<section id="{sid}"><h2>{_esc(SECTION_IDS[sid])}</h2>\n{inner}\n</section>\n'


def _note(text):
    return f'<p class="note">{_esc(text)}</p>'


def _global_section(att, n_rows, label):
    import matplotlib.pyplot as plt

    from sklearn_xai._plots import player_data

    out = [f"<p>{_esc(label)} values of {_esc(att.output_names[0])} for {n_rows} rows; "
           "bars are the mean absolute value per feature, the beeswarm shows every row "
           "(colour: the feature's value, low to high; grey-blue where not numeric).</p>"]
    fig, ax = plt.subplots(figsize=(7, 5))
    att.plot_bar(ax=ax, max_display=12)
    ax.set_title(f"mean |{label}|")
    figs = [_png(fig)]
    fig, ax = plt.subplots(figsize=(8, 5))
    att.plot_beeswarm(ax=ax, max_display=12)
    ax.set_title(f"{label} per row")
    figs.append(_png(fig))
    if player_data(att) is not None and len(att.feature_names) > 1:
        top = str(att.feature_names[int(np.argmax(np.abs(att.values).mean(axis=0)))])
        fig, ax = plt.subplots(figsize=(7, 4.6))
        att.plot_dependence(top, ax=ax)
        ax.set_title(f"{label} of {top}, the most important feature")
        figs.append(_png(fig))
        out.append(f"<p>The dependence plot shows how the value of {_esc(top)} moves its "
                   "attribution; the colour is the feature whose values best explain the "
                   "spread left at equal values of it (a heuristic, named on the colour "
                   "bar, not an interaction effect).</p>")
    return _section("treeshap-global", "".join(out) + '<div class="figs">' + "".join(figs)
                    + "</div>")


def _cut_labels(att, row, max_display):
    """The full ``"feature = value"`` labels of the waterfall bars of ``row`` that the
    figure had to cut short (wrapped onto two lines, then ellipsized)."""
    from sklearn_xai._explanation import format_cell as fmt_value
    from sklearn_xai._plots import LABEL_WIDTH, by_importance, player_data, shorten

    data = player_data(att)
    if data is None:
        return []
    out = []
    for j in by_importance(att.values[row])[:max_display]:
        full = f"{att.feature_names[j]} = {fmt_value(data[row, j])}"
        if shorten(full, LABEL_WIDTH).endswith("\u2026") and not full.endswith("\u2026"):
            out.append(full)
    return out


def _waterfall_section(att, positions, label):
    import matplotlib.pyplot as plt

    figs, long_labels = [], []
    for i, pos in enumerate(positions):
        fig, ax = plt.subplots(figsize=(5.8, 4.2))
        att.plot_waterfall(row=i, ax=ax, max_display=8)
        ax.set_title(f"row {pos}")
        cut = _cut_labels(att, i, 8)
        figs.append(_png(fig, title="; ".join(cut) or None))
        long_labels += [[pos, text] for text in cut]
    where = _esc(", ".join(map(str, positions)))
    intro = (f"<p>{_esc(label)}, {len(positions)} rows (positions {where} of "
             "the explained data): each bar moves the output from the base value to the "
             "model's output.</p>")
    table = ""
    if long_labels:
        table = ("<p>Labels longer than two lines are cut short in the figures "
                 "(ending in \u2026); in full:</p>" + _table(["row", "label"], long_labels))
    decision = ""
    if len(positions) > 1:
        fig, ax = plt.subplots(figsize=(7.5, 5))
        att.plot_decision(ax=ax, max_display=12)
        ax.set_title(f"rows {where}: from the base value (bottom) to the output (top)")
        decision = _png(fig)
    return _section("treeshap-waterfalls", intro + '<div class="figs">' + "".join(figs) +
                    decision + "</div>" + table)


def _audit_section(result, n_fit, why_not=None):
    """The off-manifold audit: verdict, importances with error bars, the evidence table."""
    if result is None:
        return _section("offmanifold-audit", _note(why_not))
    import matplotlib.pyplot as plt

    f = result.features
    top = f.loc[f[["marginal_importance", "knockoff_importance"]].max(axis=1)
                .sort_values(ascending=False, kind="stable").index[:12]]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(top) + 1.4))
    pos = np.arange(len(top))[::-1]
    for k, (kind, colour) in enumerate((("marginal", "#1f77b4"), ("knockoff", "#d62728"))):
        ax.barh(pos + (0.2 if k == 0 else -0.2), top[f"{kind}_importance"], height=0.38,
                xerr=1.96 * top[f"{kind}_se"], color=colour,
                label=f"{kind} imputation")
    ax.set_yticks(pos, [str(n) for n in top.index])
    ax.set_xlabel(f"mean |SHAP| of {', '.join(result.output_names)} (bars: 95 % intervals)")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("marginal vs knockoff importance")
    text = "".join(f"<p>{_esc(line)}</p>" for line in result.summary().splitlines())
    intro = (f"<p>OffManifoldAudit fitted on the first {n_fit} background rows (knockoff "
             "sampler, k-means background, detector), auditing the first "
             f"{result.n_rows} rows. A flag is evidence that the marginal explanation "
             "understates a feature because the model behaves differently on the rows a "
             "marginal explainer queries, not proof; a model that behaves the same on and "
             "off the data manifold passes whatever it does.</p>")
    rows = [[name, f"{r.marginal_importance:.4g} ± {r.marginal_se:.2g}",
             f"{r.knockoff_importance:.4g} ± {r.knockoff_se:.2g}", int(r.marginal_rank),
             int(r.knockoff_rank), f"{r.real_effect:.4g}", f"{r.hybrid_effect:.4g}",
             f"{r.p_adjusted:.3g}", "yes" if r.flagged else "no"]
            for name, r in f.head(12).iterrows()]
    table = _table(["feature", "marginal", "knockoff", "marginal rank", "knockoff rank",
                    "effect on real rows", "effect on detected hybrids", "p (Holm)",
                    "flagged"], rows, "num")
    return _section("offmanifold-audit", intro + text + '<div class="figs">' + _png(fig)
                    + "</div>" + table)


def _notes(names):
    """The ``_report_note`` sentences of explainers ``names``, as one string."""
    return " ".join(_CLASSES[n]._report_note for n in names if _CLASSES[n]._report_note)


def _comparison_section(atts, positions):
    """One table per row: feature value and each method's attribution, sorted by the first
    method's (a global explainer's, else the first registered) values."""
    from sklearn_xai._plots import by_importance

    names = sorted(atts, key=lambda n: (n not in GLOBAL_EXPLAINERS,
                                        ATTRIBUTION_EXPLAINERS.index(n)))
    if not names:
        return _section("attribution-comparison", _note("No attribution explainer was run."))
    out = ["<p>The same rows explained by each method. Units may differ: each column "
           "explains its own output, named in the header, so compare signs and ranks "
           "(in brackets). Every method explains the data's own columns (a pipeline's "
           "one-hot columns of one feature form one player). " + _esc(_notes(names)) +
           "</p>"]
    for i, pos in enumerate(positions):
        order_src = atts[names[0]]
        feats = list(order_src.feature_names)
        for n in names[1:]:
            feats += [f for f in atts[n].feature_names if f not in feats]
        vals = {}
        for n in names:
            a = atts[n]
            v = a._values3d()[i, :, 0]
            vals[n] = dict(zip(map(str, a.feature_names), v))
            ranks = np.argsort(by_importance(v))
            vals[n + "_rank"] = dict(zip(map(str, a.feature_names), ranks + 1))
        key = vals[names[0]]
        feats = sorted(map(str, feats), key=lambda f: -abs(key.get(f, 0.0)))
        row_data = _row_values(atts, names, i)
        header = ["feature", "value"] + [
            f"{_LABELS[n]} ({atts[n].output_names[0]}) [rank]" for n in names]
        body = []
        for f in feats:
            cells = [f, row_data.get(f, "")]
            for n in names:
                if f in vals[n]:
                    cells.append(f"{vals[n][f]:+.4f} [{vals[n + '_rank'][f]}]")
                else:
                    cells.append("-")
            body.append(cells)
        sums = ["base value -> base + sum", ""]
        model_out = ["model output", ""]
        for n in names:
            a = atts[n]
            b = float(a._base2d()[i, 0])
            sums.append(f"{b:.4f} -> {b + a._values3d()[i, :, 0].sum():.4f}")
            mo = a.extras.get("model_output")
            if _CLASSES[n]._report_exact:
                model_out.append("= base + sum (exact)")
            elif mo is not None:
                model_out.append(f"{float(np.reshape(mo, (len(a), -1))[i, 0]):.4f}")
            else:
                model_out.append("")
        body += [sums, model_out]
        out.append(f"<h3>row {pos}</h3>" + _table(header, body, "num"))
    return _section("attribution-comparison", "".join(out))


def _row_values(atts, names, i):
    for n in names[::-1]:  # the model-agnostic explainers hold the user's columns
        a = atts[n]
        if a.data is not None and np.ndim(a.data) == 2 and a.data.shape[1] == len(
                a.feature_names):
            return {str(f): _fmt(a.data[i, j]) for j, f in enumerate(a.feature_names)}
    return {}


def _counterfactual_costs(parts, X):
    """Shared costs for every counterfactual: number of changes and a scaled L1 distance.

    A changed non-numeric feature counts 1; a numeric change counts ``|a - b| / std``
    (training standard deviation), so MACE and P2CE are placed on the same axes.
    """
    import pandas as pd

    std = {}
    for c in X.columns:
        if pd.api.types.is_numeric_dtype(X[c].dtype) and not pd.api.types.is_bool_dtype(
                X[c].dtype):
            s = float(np.nanstd(X[c].to_numpy(dtype=np.float64)))
            std[c] = s if s > 0 else 1.0
    points = []  # (query position, n_changes, distance, changes list)
    for qpos, cf, i in parts:
        query = cf.queries.iloc[i]
        for _, row in cf.for_query(i).iterrows():
            n_changes, dist = 0, 0.0
            for c in cf.queries.columns:
                a, b = query[c], row[c]
                if _same(a, b):
                    continue
                n_changes += 1
                if c in std:
                    dist += abs(float(b) - float(a)) / std[c]
                else:
                    dist += 1.0
            points.append((qpos, n_changes, dist))
    return points


def _same(a, b):
    try:
        fa, fb = float(a), float(b)
        return (np.isnan(fa) and np.isnan(fb)) or bool(np.isclose(fa, fb, rtol=1e-9, atol=0))
    except (TypeError, ValueError):
        return a == b


def _recourse_section(results, X, positions, desired, skipped, immutable, time_limit):
    """Readable diffs of every counterfactual per rejected row, the methods side by side."""
    out = []
    if desired is not None:
        out.append(f"<p>Rejected rows: the first {len(positions)} explained rows the model "
                   f"does not predict as class {_esc(desired)} (positions "
                   f"{_esc(', '.join(map(str, positions)))}). Each line is one counterfactual "
                   "the method found, as the changes it makes; every one was re-predicted by "
                   "the model.</p>")
        fixed = [c for c in immutable if c in X.columns]
        limit = (f" A search stops after {time_limit:g} s per row (a result cut short by "
                 "this limit is marked partial)." if time_limit else "")
        out.append("<p>Never changed: " + (_esc(", ".join(fixed)) if fixed else "none") +
                   "." + limit + " " + _esc(_notes(n for n in RECOURSE_EXPLAINERS
                                                    if n in results)) + "</p>")
    for name, why in skipped.items():
        out.append(_note(f"{_LABELS[name]}: {why}"))
    for k, pos in enumerate(positions):
        cells = []
        for name in RECOURSE_EXPLAINERS:
            if name not in results:
                continue
            cf, i = _locate(results[name], k)
            partial = ""
            complete = cf.extras.get("complete")
            if complete is not None and not bool(np.asarray(complete)[i]):
                partial = " (partial front: time limit reached)"
            if not cf.found[i]:
                items = ["<li>no counterfactual found</li>"]
            else:
                mask = np.asarray(cf.counterfactuals["query"]) == i
                valid = np.asarray(cf.valid)[mask]
                pred = np.asarray(cf.predictions)[mask]
                pred = pred if pred.ndim == 1 else pred[:, -1]
                items = []
                for changes, ok, p in zip(cf.diff(i), valid, pred):
                    text = "; ".join(changes) if changes else "(no change)"
                    tag = "valid" if ok else "not valid"
                    items.append(f"<li><code>{_esc(text)}</code> "
                                 f"<span class=\"tag\">{tag}, p={float(p):.3f}</span></li>")
            cells.append(f'<div class="cf"><h4>{_LABELS[name]}{partial}</h4>'
                         f'<ul>{"".join(items)}</ul></div>')
        if cells:
            out.append(f"<h3>row {pos}</h3><div class=\"cfs\">{''.join(cells)}</div>")
    return _section("counterfactuals", "".join(out))


def _locate(parts, k):
    """(Counterfactuals, index within it) of the k-th query over chunked results."""
    for cf in parts:
        if k < cf.n_queries:
            return cf, k
        k -= cf.n_queries
    raise IndexError(k)


def _pareto_section(results, X, positions):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    if not results:
        return _section("pareto-scatter", _note("No counterfactual explainer was run."))
    fig, ax = plt.subplots(figsize=(7.5, 5))
    colours = plt.get_cmap("tab10")
    shapes = ["x", "o", "^", "v", "D", "s", "P", "*"]
    markers = {n: shapes[k % len(shapes)] for k, n in enumerate(RECOURSE_EXPLAINERS)}
    offsets = np.linspace(0.08, -0.08, len(RECOURSE_EXPLAINERS)) \
        if len(RECOURSE_EXPLAINERS) > 1 else [0.0]
    jitters = dict(zip(RECOURSE_EXPLAINERS, offsets))
    summary = []
    for name in RECOURSE_EXPLAINERS:
        if name not in results:
            continue
        triples = []
        for k in range(len(positions)):
            cf, i = _locate(results[name], k)
            triples.append((k, cf, i))
        pts = _counterfactual_costs(triples, X)
        if pts:
            q = np.array([p[0] for p in pts])
            nc = np.array([p[1] for p in pts], dtype=float)
            d = np.array([p[2] for p in pts])
            ax.scatter(nc + jitters[name], d, c=[colours(int(v) % 10) for v in q],
                       marker=markers[name], s=45)
        summary.append([_LABELS[name], len(pts),
                        sum(bool(_locate(results[name], k)[0].found[_locate(results[name],
                                                                            k)[1]])
                            for k in range(len(positions)))])
    ax.set_xlabel("number of changed features")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # a count: whole numbers only
    ax.set_ylabel("distance (numeric change / training std; 1 per categorical change)")
    ax.set_title("Counterfactual costs (lower-left is better)")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="black", marker=markers[n], linestyle="", label=_LABELS[n])
               for n in RECOURSE_EXPLAINERS if n in results]
    handles += [Line2D([], [], color=colours(k % 10), marker="s", linestyle="",
                       label=f"row {pos}") for k, pos in enumerate(positions)]
    ax.legend(handles=handles, fontsize=8, loc="best")
    text = ("<p>Every counterfactual of each method on the same two costs, computed here "
            "the same way for every method. " + _esc(_notes(results)) + "</p>")
    table = _table(["method", "counterfactuals", f"rows with one (of {len(positions)})"],
                   summary)
    return _section("pareto-scatter", text + '<div class="figs">' + _png(fig) + "</div>" +
                    table)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1100px;color:#222;line-height:1.4;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
section{margin-bottom:1.5em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f3f3f3}
table.num td:nth-child(n+3){text-align:right;font-family:ui-monospace,monospace}
.figs{display:flex;flex-wrap:wrap;gap:1em}.figs img{max-width:100%;height:auto}
.note{color:#7a4b00;background:#fff6e0;padding:.4em .7em;border-left:3px solid #e0a800}
.cfs{display:flex;flex-wrap:wrap;gap:1.5em}.cf{flex:1 1 420px}
.cf h4{margin:.2em 0}.cf ul{margin:.2em 0;padding-left:1.2em}
.tag{color:#666;font-size:.85em}code{font-size:.9em}
"""


def _page(title, sections):
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>\n"
            f"<h1>{_esc(title)}</h1>\n" + "".join(sections) + "</body></html>\n")


# ------------------------------------------------------------------------------------------
# the report
# ------------------------------------------------------------------------------------------


def build_report(workload, out, progress, *, explainers=DEFAULT_EXPLAINERS, n_rows=3,
                 n_global=500, n_background=None, time_limit=None, seed=0, explicit=False,
                 audit=False, t_start=None):
    """Explain ``workload`` and write the HTML report to ``out``.

    Parameters
    ----------
    workload : Workload
    out : path-like
        The HTML file written (its folder is created).
    progress : Progress
    explainers : sequence of str
        Among :data:`EXPLAINERS`.
    n_rows : int
        Rows shown in detail (waterfalls, method comparison) and rejected rows given
        counterfactuals.
    n_global : int
        Rows behind the TreeSHAP global importance (the first ``n_global`` rows).
    n_background : int or None
        The explainers are fitted on the first ``n_background`` rows of ``workload.X``
        (``None``: all of them); the count is stated in the report.
    time_limit : float or None
        Seconds of P2CE search per rejected row (compilation excluded); a front cut short
        is marked partial. ``None`` (the default): no limit, so the report does not depend
        on the machine's speed.
    seed : int
        ``random_state`` of every seeded explainer.
    explicit : bool
        Whether the user named the explainers: then one that cannot explain the model is
        an error; otherwise it is skipped with a note in the report.
    audit : bool
        Whether to run :class:`~sklearn_xai.OffManifoldAudit` (fitted on the background
        rows, auditing the ``n_global`` rows) for its section; otherwise the section says
        it was not run.
    t_start : float or None
        ``time.perf_counter()`` at the start of the run (for the total); ``None``: now.

    Returns
    -------
    pathlib.Path
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    t_start = time.perf_counter() if t_start is None else t_start
    out = Path(out)
    check_names(explainers)
    explainers = list(dict.fromkeys(explainers))
    X, rows = workload.X, workload.rows
    if n_background is not None and n_background < len(X):
        X = X.iloc[:n_background]
    run = _Run(workload, X, progress, seed=seed, explicit=explicit,
               n_rows=min(n_rows, len(rows)), n_global=min(n_global, len(rows)),
               time_limit=time_limit)
    atts, global_name, global_att = _run_attributions(run, explainers)
    recourse, rejected, desired = _run_recourse(run, explainers)
    audit_result = None
    if audit:
        audit_result, _ = audit_workload(workload, progress, n_rows=run.n_global,
                                         n_background=len(X), seed=seed)
    for name in EXPLAINERS:
        if name not in explainers:
            run.skipped.setdefault(name, "not requested (--explainer)")
    with progress.step("draw figures and write HTML"):
        sections = [_summary_section(workload, explainers, run.n_rows, run.n_global,
                                     rejected, len(X), seed, global_name)]
        sections += _global_sections(run, global_name, global_att, atts)
        sections.append(_comparison_section(atts, list(range(run.n_rows))))
        rej_skipped = {n: run.skipped[n] for n in RECOURSE_EXPLAINERS if n in run.skipped}
        sections.append(_recourse_section(recourse, X, rejected, desired, rej_skipped,
                                          workload.immutable, time_limit))
        sections.append(_pareto_section(recourse, X, rejected))
        sections.append(_audit_section(
            audit_result, len(X), "Not run: pass --audit to add it (it fits a knockoff "
            "sampler and a detector and runs two SHAP computations)."))
        total = time.perf_counter() - t_start
        sections.append(_timings_section(list(progress.timings), total))
        page = _page("sklearn-xai report", sections)
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            out.write_text(page, encoding="utf-8")
        except OSError as exc:
            raise ReportError(f"cannot write {out}: {_one_line(exc)}") from exc
    return out


@dataclass
class _Run:
    """What every step of :func:`build_report` shares; ``skipped``: name -> why not run."""

    workload: Workload
    X: object
    progress: Progress
    seed: int
    explicit: bool
    n_rows: int
    n_global: int
    time_limit: float | None
    skipped: dict = field(default_factory=dict)

    def attempt(self, name, func):
        """``func()``; a ReportError is raised if the user named the explainers, else the
        explainer is skipped with a note."""
        try:
            return func()
        except ReportError as exc:
            if self.explicit:
                raise
            self.skipped[name] = str(exc)
            self.progress._write(f"  skipped {_LABELS[name]}: {exc}\n")
            return None


def _run_attributions(run, explainers):
    """Every requested attribution explainer on the detailed rows, the first global one
    (``_report_global``) on ``n_global`` rows; returns (atts, global name, its values)."""
    model, rows = run.workload.model, run.workload.rows
    detail = rows.iloc[:run.n_rows]
    wanted = [n for n in ATTRIBUTION_EXPLAINERS if n in explainers]
    global_name = next((n for n in wanted if n in GLOBAL_EXPLAINERS), None)
    atts, global_att = {}, None
    for name in wanted:
        if name == global_name:
            n = max(run.n_global, run.n_rows)
            global_att = _one_output(run.attempt(name, lambda: explain_rows(
                name, model, run.X, rows.iloc[:n], run.progress, seed=run.seed)))
            if global_att is not None:
                atts[name] = _subset_attribution(global_att, run.n_rows)
            continue
        res = run.attempt(name, lambda name=name: explain_rows(
            name, model, run.X, detail, run.progress, seed=run.seed))
        if res is not None:
            atts[name] = _one_output(res)
    return atts, global_name, global_att


def _run_recourse(run, explainers):
    """Every requested recourse explainer on the first ``n_rows`` rejected rows; returns
    (results by name, positions of the rejected rows, the desired class)."""
    model, rows = run.workload.model, run.workload.rows
    recourse, rejected, desired = {}, [], None
    wanted = [n for n in RECOURSE_EXPLAINERS if n in explainers]
    if not wanted:
        return recourse, rejected, desired
    if not _is_classifier(model):
        for n in wanted:
            msg = f"needs a classifier with predict_proba; {_model_name(model)} has none"
            if run.explicit:
                raise ReportError(f"--explainer {n} {msg}")
            run.skipped[n] = msg
        return recourse, rejected, desired
    desired = _desired_class(model)
    with run.progress.step("find rejected rows"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = np.asarray(model.predict(rows.iloc[:max(run.n_global, 200)]))
    rejected = list(np.flatnonzero(pred != desired)[:run.n_rows])
    queries = rows.iloc[rejected]
    for name in wanted:
        if not len(queries):
            run.skipped[name] = f"no explained row is predicted other than {desired!r}"
            continue
        res = run.attempt(name, lambda name=name: explain_rows(
            name, model, run.X, queries, run.progress, seed=run.seed,
            immutable=run.workload.immutable, time_limit=run.time_limit))
        if res is not None:
            recourse[name] = res
    return recourse, rejected, desired


def _global_sections(run, global_name, global_att, atts):
    """The global importance and waterfall sections of the global explainer, or notes."""
    if global_att is not None:
        label = _LABELS[global_name]
        return [_global_section(global_att, len(global_att), label),
                _waterfall_section(atts[global_name], list(range(run.n_rows)), label)]
    name = global_name or (GLOBAL_EXPLAINERS[0] if GLOBAL_EXPLAINERS else None)
    why = (f"{_LABELS[name]}: {run.skipped.get(name, 'was not run')}" if name else
           "no registered explainer declares a global view (_report_global)")
    return [_section("treeshap-global", _note(why)),
            _section("treeshap-waterfalls", _note(why))]


def _one_output(att):
    """With several explained outputs (multi-class), keep the last one: the class the
    counterfactuals aim for. The report names the output it shows."""
    if att is None or att.n_outputs == 1:
        return att
    from sklearn_xai._explanation import Attribution

    k = att.n_outputs - 1
    extras = {}
    mo = att.extras.get("model_output")
    if mo is not None:
        extras["model_output"] = np.reshape(mo, (len(att), -1))[:, k]
    return Attribution(values=att.values[:, :, k], base_values=att.base_values[:, k],
                       data=att.data, feature_names=list(att.feature_names),
                       output_names=[att.output_names[k]], extras=extras)


def _subset_attribution(att, n):
    from sklearn_xai._explanation import Attribution

    return Attribution(values=att.values[:n], base_values=att.base_values[:n],
                       data=None if att.data is None else att.data[:n],
                       feature_names=list(att.feature_names),
                       output_names=list(att.output_names))


def _summary_section(workload, explainers, n_rows, n_global, rejected, n_background, seed,
                     global_name=None):
    facts = [("data", workload.data_desc)] + list(workload.facts)
    label = _LABELS[global_name] if global_name else "the"
    facts += [
        ("explainers", ", ".join(_LABELS[e] for e in explainers)),
        (f"rows for {label} global importance",
         f"the first {n_global} of {len(workload.rows)} rows"),
        ("rows explained in detail (waterfalls, comparison)", f"the first {n_rows}"),
        ("rejected rows given counterfactuals", str(len(rejected))),
        ("rows the explainers are fitted on (background)",
         f"the first {n_background} of {len(workload.X)} rows"),
        ("seed (random_state of every seeded explainer)", str(seed)),
        ("versions", _versions()),
    ]
    inner = _table(["", "value"], facts)
    inner += "".join(_note(n) for n in workload.notes)
    return _section("summary", inner)


def _versions():
    import sklearn

    import sklearn_xai

    return (f"sklearn-xai {sklearn_xai.__version__}, scikit-learn {sklearn.__version__}, "
            f"numpy {np.__version__}, Python {sys.version.split()[0]}")


def _timings_section(timings, total):
    rows = [[name, f"{sec:.2f} s"] for name, sec in timings]
    rows.append(["total (until the HTML was drawn)", f"{total:.2f} s"])
    return _section("timings", _table(["step", "time"], rows, "num"))


def default_out():
    """``sklearn-xai-report.html`` in the current folder."""
    return Path(os.getcwd()) / "sklearn-xai-report.html"
