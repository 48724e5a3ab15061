"""Read LightGBM models (``LGBMModel`` wrappers or ``lightgbm.Booster``) into a FlatEnsemble.

Read from ``Booster.dump_model()``. Routing compares in float64 ``x <= t``;
missing types ``None`` (NaN becomes 0), ``Zero`` (0 and NaN follow the default
direction) and ``NaN`` (NaN follows the default direction); categorical ``==``
splits list the categories that go left, and NaN or negative categories go right.
Cover is the row count (``internal_count`` / ``leaf_count``), which is what
LightGBM's own ``pred_contrib`` uses. ``boosting="rf"`` (``average_output``)
divides the leaf values by the number of iterations.
"""

import numpy as np

from ._ensemble import (
    MISSING_NAN,
    MISSING_NONE,
    MISSING_ZERO,
    MODE_CAT,
    MODE_LE64,
    class_output_names,
    make_ensemble,
)

_MISSING = {"None": MISSING_NONE, "Zero": MISSING_ZERO, "NaN": MISSING_NAN}


def _link(objective):
    """The link and its slope (LightGBM's ``sigmoid``) of a dumped objective."""
    obj, *params = objective.split(" ")
    params = dict(p.split(":", 1) for p in params if ":" in p)
    if obj in ("binary", "multiclassova"):
        return "logistic", float(params.get("sigmoid", "1"))
    if obj in ("cross_entropy", "xentropy"):
        return "logistic", 1.0
    if obj == "multiclass":
        return "softmax", 1.0
    if obj in ("poisson", "gamma", "tweedie"):
        return "exp", 1.0
    if obj in ("cross_entropy_lambda", "xentlambda"):
        return "softplus", 1.0
    if "sqrt" in objective.split(" ")[1:]:  # reg_sqrt: trained on sqrt(y)
        return "signed_square", 1.0
    return "identity", 1.0


def _flatten_tree(root, name):
    """Pre-order flattening of one dumped tree into local arrays."""
    # iterative to survive very deep trees
    stack = [(root, None, None)]
    order = []
    while stack:
        nd, parent, side = stack.pop()
        i = len(order)
        order.append(nd)
        if parent is not None:
            order[parent]["_l" if side == 0 else "_r"] = i
        if "split_index" in nd:
            stack.append((nd["right_child"], i, 1))
            stack.append((nd["left_child"], i, 0))
    n = len(order)
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    feat = np.full(n, -1, dtype=np.int64)
    thr = np.zeros(n)
    mode = np.full(n, MODE_LE64, dtype=np.int8)
    miss = np.full(n, MISSING_NAN, dtype=np.int8)
    dl = np.zeros(n, dtype=bool)
    cover = np.ones(n)
    value = np.zeros(n)
    cats = {}
    for i, nd in enumerate(order):
        if "split_index" in nd:
            left[i], right[i] = nd["_l"], nd["_r"]
            feat[i] = nd["split_feature"]
            cover[i] = nd.get("internal_count", 1.0)
            if nd["decision_type"] == "==":
                mode[i] = MODE_CAT
                cats[i] = [int(c) for c in str(nd["threshold"]).split("||")]
                # NaN and negative categories go right in LightGBM
                miss[i] = MISSING_NAN
                dl[i] = False
            elif nd["decision_type"] == "<=":
                thr[i] = float(nd["threshold"])
                miss[i] = _MISSING[nd.get("missing_type", "None")]
                dl[i] = bool(nd["default_left"])
            else:
                raise ValueError(f"{name}: unknown decision_type {nd['decision_type']!r}")
        else:
            if "leaf_coeff" in nd or "leaf_features" in nd:
                raise ValueError(
                    f"{name} uses linear_tree=True: leaves hold linear models, which "
                    "TreeSHAP cannot explain; refit with linear_tree=False")
            value[i] = nd["leaf_value"]
            cover[i] = nd.get("leaf_count", 1.0)
    return left, right, feat, thr, mode, miss, dl, cover, value, cats


def parse_lightgbm(model):
    """Parse a fitted LightGBM model.

    Parameters
    ----------
    model : lightgbm.LGBMModel or lightgbm.Booster

    Returns
    -------
    ens : FlatEnsemble
    input_transform : None
    """
    import lightgbm as lgb

    if isinstance(model, lgb.LGBMModel):
        booster = model.booster_
        name = type(model).__name__
        classes = getattr(model, "classes_", None)
    elif isinstance(model, lgb.Booster):
        booster, name, classes = model, "Booster", None
    else:
        raise TypeError(f"{type(model).__name__} is not a LightGBM model")
    params = getattr(booster, "params", {}) or {}
    if params.get("linear_tree") in (True, "true", 1, "1"):
        raise ValueError(f"{name} uses linear_tree=True: leaves hold linear models, which "
                         "TreeSHAP cannot explain; refit with linear_tree=False")
    dump = booster.dump_model()
    K = int(dump["num_tree_per_iteration"])
    infos = dump["tree_info"]
    n_iter = max(len(infos) // K, 1)
    scale = 1.0 / n_iter if dump.get("average_output") else 1.0
    trees = []
    for i, info in enumerate(infos):
        left, right, feat, thr, mode, miss, dl, cover, value, cats = _flatten_tree(
            info["tree_structure"], name)
        trees.append({
            "children_left": left, "children_right": right, "feature": feat,
            "threshold": thr, "mode": mode, "missing": miss, "default_left": dl,
            "cover": cover, "value": (value * scale)[:, None], "output": i % K, "cats": cats,
        })
    names = class_output_names(classes, K, "raw")
    link, link_scale = _link(dump["objective"])
    ens = make_ensemble(trees, n_features=int(dump["max_feature_idx"]) + 1, n_outputs=K,
                        base_score=np.zeros(K), link=link, link_scale=link_scale,
                        output_names=names, feature_names=dump.get("feature_names"),
                        model_name=name)
    return ens, None


def lightgbm_categories(model):
    """The training categories of pandas categorical columns (``pandas_categorical``)."""
    import lightgbm as lgb

    booster = model.booster_ if isinstance(model, lgb.LGBMModel) else model
    cats = getattr(booster, "pandas_categorical", None)  # kept by the booster, also loaded
    return cats if cats is not None else booster.dump_model().get("pandas_categorical")
