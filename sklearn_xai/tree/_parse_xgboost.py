"""Read XGBoost models (``XGBModel`` wrappers or ``xgboost.Booster``) into a FlatEnsemble.

The model is read from ``Booster.save_raw("json")`` (never from the rounded text
dumps). Thresholds are float32 and compared as ``float32(x) < float32(t)``; cover
is ``sum_hessian``; categorical nodes list the categories that go *right*, so the
parser swaps the children to fit the format (listed categories go left). XGBoost
rounds the input to float32 and sends every present value that is not a listed
category (never seen, beyond the largest, negative) to the unlisted side, hence
``MODE_CAT32``. ``base_score`` (a list-string since XGBoost 3.1) is mapped to margin
space. :func:`xgboost_categories` reads the pandas categories stored in the model
(XGBoost >= 3.1), with which XGBoost re-codes DataFrames by name.
"""

import ast
import json
import math

import numpy as np

from ._ensemble import (
    MISSING_NAN,
    MODE_CAT32,
    MODE_LT32,
    class_output_names,
    make_ensemble,
)

_LOGIT = {"binary:logistic", "reg:logistic"}
_LOG = {"count:poisson", "reg:gamma", "reg:tweedie", "survival:cox", "survival:aft"}


def _base_margin(objective, base):
    base = np.asarray(base, dtype=np.float64)
    if objective in _LOGIT:
        with np.errstate(divide="ignore"):
            return np.log(base) - np.log1p(-base)
    if objective in _LOG:
        return np.log(base)
    return base


def _link(objective, n_outputs):
    if objective in _LOGIT:
        return "logistic"
    if objective.startswith("multi:"):
        return "softmax"
    if objective in _LOG:
        return "exp"
    return "identity"


def parse_xgboost(model):
    """Parse a fitted XGBoost model.

    Parameters
    ----------
    model : xgboost.XGBModel or xgboost.Booster

    Returns
    -------
    ens : FlatEnsemble
    input_transform : None
    """
    booster, missing, best, name, classes = _booster_of(model)
    js = json.loads(booster.save_raw("json"))
    learner = js["learner"]
    gb = learner["gradient_booster"]
    objective = learner["objective"]["name"]
    weights = None
    if gb["name"] == "dart":
        weights = np.asarray(gb["weight_drop"], dtype=np.float64)
        gb = gb["gbtree"]
    elif gb["name"] != "gbtree":
        raise ValueError(f"{name} uses booster={gb['name']!r}; only tree boosters "
                         "(gbtree, dart) can be explained by TreeSHAP")
    mp = learner["learner_model_param"]
    n_features = int(mp["num_feature"])
    n_class = int(mp.get("num_class", "0"))
    n_target = int(mp.get("num_target", "1"))
    K = max(n_class, n_target, 1)
    bs = mp["base_score"]
    base = ast.literal_eval(bs) if bs.strip().startswith("[") else float(bs)
    base = np.broadcast_to(np.asarray(base, dtype=np.float64).reshape(-1), (K,)).copy()
    base = _base_margin(objective, base)

    trees_js = gb["model"]["trees"]
    info = gb["model"]["tree_info"]
    n_trees = len(trees_js)
    if best is not None:
        indptr = gb["model"].get("iteration_indptr")
        if indptr is not None and best + 1 < len(indptr):
            n_trees = int(indptr[best + 1])
    trees = [_parse_tree(trees_js[i], name, 1.0 if weights is None else weights[i],
                         int(info[i]) if K > 1 else 0) for i in range(n_trees)]
    names = class_output_names(classes, K, "margin")
    fnames = learner.get("feature_names") or None
    return make_ensemble(trees, n_features=n_features, n_outputs=K, base_score=base,
                         link=_link(objective, K), output_names=names, feature_names=fnames,
                         missing_value=missing, model_name=name), None


def _booster_of(model):
    """``(booster, missing, best_iteration, name, classes)`` of an XGBoost model."""
    import xgboost as xgb

    if isinstance(model, xgb.XGBModel):
        booster = model.get_booster()
        missing = getattr(model, "missing", np.nan)
        missing = np.nan if missing is None else float(missing)
        best = getattr(model, "best_iteration", None) if _has_best(model) else None
        return booster, missing, best, type(model).__name__, getattr(model, "classes_", None)
    if isinstance(model, xgb.Booster):
        return model, np.nan, None, "Booster", None
    raise TypeError(f"{type(model).__name__} is not an XGBoost model")


def _parse_tree(t, name, scale, output):
    """One tree of the JSON dump as a dict for :func:`make_ensemble`, its leaf values
    times ``scale`` (a DART weight) and contributing to output ``output``."""
    if int(t["tree_param"].get("size_leaf_vector", "1")) > 1:
        raise ValueError(
            f"{name} has vector-leaf trees (multi_strategy='multi_output_tree'); "
            "they are not supported, use multi_strategy='one_output_per_tree'")
    left = np.asarray(t["left_children"], dtype=np.int64)
    right = np.asarray(t["right_children"], dtype=np.int64)
    leaf = left < 0
    cond = np.asarray(t["split_conditions"], dtype=np.float32).astype(np.float64)
    dl = np.asarray(t["default_left"], dtype=bool)
    stype = np.asarray(t["split_type"], dtype=np.int64) if t.get("split_type") else \
        np.zeros(len(left), dtype=np.int64)
    is_cat = (stype == 1) & ~leaf
    cats = {}
    if np.any(is_cat):
        cv = t["categories"]
        seg = t["categories_segments"]
        size = t["categories_sizes"]
        for node, s, z in zip(t["categories_nodes"], seg, size, strict=True):
            cats[int(node)] = np.asarray(cv[s:s + z], dtype=np.int64)
        # listed categories go right in XGBoost: swap to make them go left
        left, right = np.where(is_cat, right, left), np.where(is_cat, left, right)
        dl = np.where(is_cat, ~dl, dl)
    value = np.where(leaf, cond, 0.0) * scale
    return {
        "children_left": left,
        "children_right": right,
        "feature": np.asarray(t["split_indices"], dtype=np.int64),
        "threshold": np.where(leaf | is_cat, 0.0, cond),
        "mode": np.where(is_cat, MODE_CAT32, MODE_LT32),
        "missing": MISSING_NAN,
        "default_left": dl,
        "cover": np.asarray(t["sum_hessian"], dtype=np.float64),
        "value": value[:, None],
        "output": output,
        "cats": cats,
    }


def _has_best(model):
    try:
        b = model.best_iteration
    except AttributeError:
        return False
    return b is not None and not (isinstance(b, float) and math.isnan(b))


def _booster_json(model):
    import xgboost as xgb

    booster = model.get_booster() if isinstance(model, xgb.XGBModel) else model
    return json.loads(booster.save_raw("json"))


def xgboost_categories(model):
    """The categories XGBoost re-codes each categorical feature with.

    Parameters
    ----------
    model : xgboost.XGBModel or xgboost.Booster

    Returns
    -------
    cats : list, one entry per feature
        ``None`` for a numeric feature; for a categorical one the dict mapping each
        stored category's key (see :func:`category_keys`) to its code, empty when the
        model stored no categories (trained on codes, or saved by XGBoost < 3.1):
        XGBoost then takes a DataFrame's own category codes.
    """
    learner = _booster_json(model)["learner"]
    gb = learner["gradient_booster"]
    if gb["name"] == "dart":
        gb = gb["gbtree"]
    enc = gb.get("model", {}).get("cats", {}).get("enc") or []
    out = []
    for j, t in enumerate(learner.get("feature_types") or []):
        entry = enc[j] if j < len(enc) else {}
        values = entry.get("values") or []
        if t != "c":
            out.append(None)
        elif not values:
            out.append({})
        elif "offsets" in entry:  # strings: one int8 buffer cut at the offsets
            raw = bytes(v & 0xFF for v in values)
            off = entry["offsets"]
            out.append({raw[a:b]: i for i, (a, b) in enumerate(zip(off[:-1], off[1:],
                                                                   strict=True))})
        else:
            out.append({v: i for i, v in enumerate(values)})
    return out


def category_keys(categories):
    """Keys of a DataFrame's categories, as XGBoost compares them with the stored ones.

    Numbers are their values. Strings are cut from one UTF-8 buffer at offsets that
    XGBoost (3.1, 3.2) counts in characters, so a non-ASCII name gets the same garbled
    key on both sides as long as the category lists agree.
    """
    values = list(categories)
    if values and all(isinstance(v, str) for v in values):
        ends = np.cumsum([0] + [len(v) for v in values])
        buf = "".join(values).encode("utf-8")[: ends[-1]]
        return [buf[a:b] for a, b in zip(ends[:-1], ends[1:], strict=True)]
    return [v.item() if isinstance(v, np.generic) else v for v in values]
