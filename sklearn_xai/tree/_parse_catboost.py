"""Read CatBoost models (oblivious trees on numeric features) into a FlatEnsemble.

The model is read from ``save_model(format="json")``. An oblivious tree of depth ``d``
applies one split per level, the same across the level; split ``i`` of the tree's
``splits`` list sets bit ``i`` of the leaf index when ``float32(x) > border``. Each
tree becomes a complete binary tree whose root tests the last split of the list (as
CatBoost's own ``ShapValues`` order the levels), covers from ``leaf_weights``. Missing
values go where CatBoost sends them: ``nan_value_treatment="AsTrue"`` (``nan_mode="Max"``)
to bit 1, otherwise to bit 0. Leaf values are multiplied by the model's scale, the bias
is the base score. Categorical (CTR), text and embedding features are not supported.
"""

import json
import os
import tempfile

import numpy as np

from ._ensemble import MISSING_NAN, MODE_LE32, make_ensemble


def _model_json(model):
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        model.save_model(path, format="json")
        with open(path) as fh:
            return json.load(fh)
    finally:
        os.remove(path)


def _oblivious_tree(tree, columns, nan_right, scale, K):
    """A complete binary tree (local indices, breadth-first) for one oblivious tree."""
    splits = tree["splits"]
    d = len(splits)
    leaf_values = np.asarray(tree["leaf_values"], dtype=np.float64).reshape(2 ** d, K)
    weights = np.asarray(tree["leaf_weights"], dtype=np.float64)
    n_int = 2 ** d - 1
    n = n_int + 2 ** d
    idx = np.arange(n)
    left = np.where(idx < n_int, 2 * idx + 1, -1)
    right = np.where(idx < n_int, 2 * idx + 2, -1)
    feature = np.full(n, -1, dtype=np.int64)
    threshold = np.zeros(n)
    default_left = np.zeros(n, dtype=bool)
    # level l (root l = 0) tests split d - 1 - l; leaf code bit i is split i's outcome
    for node in range(n_int):
        level = int(np.floor(np.log2(node + 1)))
        s = splits[d - 1 - level]
        if s.get("split_type", "FloatFeature") != "FloatFeature":
            raise ValueError(
                f"CatBoost split of type {s.get('split_type')!r}: only numeric features are "
                "supported; pass categorical columns as numbers (e.g. ordinal codes) "
                "instead of cat_features.")
        f = int(s["float_feature_index"])
        feature[node] = columns[f]
        threshold[node] = float(np.float32(s["border"]))
        default_left[node] = not nan_right[f]
    value = np.zeros((n, K))
    cover = np.zeros(n)
    # leaf n_int + j took the branches of j's bits from the root down, most significant
    # first: bit i of j is the outcome of split i, so j is CatBoost's leaf index
    value[n_int:] = leaf_values * scale
    cover[n_int:] = weights
    for node in range(n_int - 1, -1, -1):
        cover[node] = cover[2 * node + 1] + cover[2 * node + 2]
    return {
        "children_left": left, "children_right": right, "feature": feature,
        "threshold": threshold, "mode": MODE_LE32, "missing": MISSING_NAN,
        "default_left": default_left, "cover": cover, "value": value, "output": -1,
    }


def parse_catboost(model):
    """Parse a fitted ``CatBoostClassifier``, ``CatBoostRegressor`` or ``CatBoost``.

    Returns
    -------
    ens : FlatEnsemble
    input_transform : None
    """
    name = type(model).__name__
    if not model.is_fitted():
        raise ValueError(f"{name} is not fitted; fit it before explaining it.")
    if model.get_cat_feature_indices() or model.get_text_feature_indices() or \
            model.get_embedding_feature_indices():
        raise ValueError(
            f"{name} has categorical, text or embedding features; TreeShapExplainer reads "
            "CatBoost models on numeric features only (encode categories as numbers).")
    d = _model_json(model)
    if "oblivious_trees" not in d:
        raise ValueError(f"{name} has non-symmetric trees (grow_policy other than "
                         "'SymmetricTree'); only oblivious trees are supported.")
    floats = d["features_info"].get("float_features", [])
    columns = np.asarray([f["flat_feature_index"] for f in floats], dtype=np.int64)
    nan_right = np.asarray([f.get("nan_value_treatment") == "AsTrue" for f in floats])
    scale, bias = d.get("scale_and_bias", [1.0, [0.0]])
    bias = np.atleast_1d(np.asarray(bias, dtype=np.float64))
    trees_json = d["oblivious_trees"]
    K = len(trees_json[0]["leaf_values"]) // 2 ** len(trees_json[0]["splits"]) \
        if trees_json else len(bias)
    trees = [_oblivious_tree(t, columns, nan_right, float(scale), K) for t in trees_json]
    if len(bias) != K:
        bias = np.resize(bias, K)
    loss = str(model.get_all_params().get("loss_function", "RMSE")).split(":")[0]
    link = {"Logloss": "logistic", "CrossEntropy": "logistic", "MultiClass": "softmax",
            "MultiClassOneVsAll": "logistic",  # one sigmoid per class
            "Poisson": "exp", "Tweedie": "exp"}.get(loss, "identity")
    classes = getattr(model, "classes_", None)
    if link in ("logistic", "softmax") and classes is not None:
        names = [str(c) for c in classes]
        if K == 1:  # binary: the margin is the last class's
            names = names[1:]
    else:
        names = ["y"] if K == 1 else [f"y{k}" for k in range(K)]
    n_features = len(model.feature_names_) if model.feature_names_ else \
        int(columns.max() + 1 if len(columns) else 0)
    return make_ensemble(trees, n_features=n_features, n_outputs=K, base_score=bias,
                         link=link, output_names=names, model_name=name), None
