"""Read fitted scikit-learn tree models into a :class:`FlatEnsemble`.

Supported: ``DecisionTreeClassifier/Regressor``, ``RandomForest*``, ``ExtraTrees*``,
``GradientBoosting*`` (constant init only) and ``HistGradientBoosting*`` (numeric,
native categorical and missing values). Nothing here knows about Shapley values.

Covers: ``tree_.weighted_n_node_samples`` for the classic trees, node ``count``
for HistGradientBoosting. Routing: classic trees compare ``float32(x) <= t``;
HistGradientBoosting compares in float64.
"""

import numpy as np

from ._ensemble import (
    MISSING_NAN,
    MODE_CAT,
    MODE_LE32,
    MODE_LE64,
    make_ensemble,
)


class HGBInputTransform:
    """Map raw inputs to the numeric space of a HistGradientBoosting model.

    HistGradientBoosting with categorical features ordinal-encodes them in an
    internal ``ColumnTransformer`` that puts them first; this applies that
    encoder and restores the original column order, so column ``j`` of the
    output is input column ``j`` (categoricals as their integer codes, unknown
    categories as NaN).
    """

    def __init__(self, preprocessor, perm):
        self.preprocessor = preprocessor
        self.perm = np.asarray(perm)

    def __call__(self, X):
        Xp = np.asarray(self.preprocessor.transform(X), dtype=np.float64)
        out = np.empty_like(Xp)
        out[:, self.perm] = Xp
        return out


def _leaf_tree(tree, value, output, cover_attr="weighted_n_node_samples"):
    t = tree
    is_leaf = t.children_left < 0
    missing_left = getattr(t, "missing_go_to_left", None)
    if missing_left is None:
        missing_left = np.zeros(t.node_count, dtype=bool)
    return {
        "children_left": t.children_left,
        "children_right": t.children_right,
        "feature": np.where(is_leaf, -1, t.feature),
        "threshold": np.where(is_leaf, 0.0, t.threshold),
        "mode": MODE_LE32,
        "missing": MISSING_NAN,
        "default_left": np.asarray(missing_left, dtype=bool),
        "cover": np.asarray(getattr(t, cover_attr), dtype=np.float64),
        "value": value,
        "output": output,
    }


def _classic_trees(estimators, scale, classifier, n_classes):
    trees = []
    for est in estimators:
        t = est.tree_
        if t.n_outputs != 1:
            raise ValueError(
                f"{type(est).__name__} with {t.n_outputs} outputs (multi-output) is not "
                "supported for classification; fit one model per output.")
        v = t.value[:, 0, :].astype(np.float64)
        if classifier:
            s = v.sum(axis=1, keepdims=True)
            v = np.divide(v, s, out=np.zeros_like(v), where=s > 0)
            if v.shape[1] != n_classes:
                raise ValueError("a tree of the forest saw fewer classes than the forest")
        trees.append(_leaf_tree(t, v * scale, -1))
    return trees


def parse_sklearn(model):
    """Parse a fitted scikit-learn tree model.

    Returns
    -------
    ens : FlatEnsemble
    input_transform : callable or None
        Maps model inputs to the ensemble's numeric feature space (only for
        HistGradientBoosting with categorical features).
    """
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
    )
    from sklearn.ensemble._forest import BaseForest
    from sklearn.tree import BaseDecisionTree

    name = type(model).__name__
    n_features = int(model.n_features_in_)
    fnames = getattr(model, "feature_names_in_", None)
    if isinstance(model, BaseDecisionTree | BaseForest):
        classifier = hasattr(model, "classes_")
        ests = model.estimators_ if isinstance(model, BaseForest) else [model]
        scale = 1.0 / len(ests)
        if classifier:
            if isinstance(model.classes_, list):
                raise ValueError(f"{name} with multiple outputs is not supported; "
                                 "fit one classifier per output.")
            n_out = len(model.classes_)
            names = [str(c) for c in model.classes_]
            trees = _classic_trees(ests, scale, True, n_out)
            raw_space = "probability"
        else:
            n_out = int(model.n_outputs_)
            names = [f"y{k}" for k in range(n_out)] if n_out > 1 else ["y"]
            trees = []
            for est in ests:
                v = est.tree_.value[:, :, 0].astype(np.float64)
                trees.append(_leaf_tree(est.tree_, v * scale, -1))
            raw_space = "margin"
        ens = make_ensemble(trees, n_features=n_features, n_outputs=n_out,
                            base_score=np.zeros(n_out), link="identity", output_names=names,
                            feature_names=fnames, model_name=name, raw_space=raw_space)
        return ens, None
    if isinstance(model, GradientBoostingClassifier | GradientBoostingRegressor):
        return _parse_gb(model), None
    if isinstance(model, HistGradientBoostingClassifier | HistGradientBoostingRegressor):
        return _parse_hgb(model)
    raise TypeError(
        f"TreeShapExplainer cannot explain {name}: it is not a supported scikit-learn tree "
        "model (DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*, "
        "HistGradientBoosting*).")


def _link_from_loss(loss):
    lname = type(loss).__name__
    return {
        "HalfBinomialLoss": "logistic",
        "HalfMultinomialLoss": "softmax",
        "ExponentialLoss": "logistic2x",
        "HalfPoissonLoss": "exp",
        "HalfGammaLoss": "exp",
        "HalfTweedieLoss": "exp",
        "HalfTweedieLossIdentity": "identity",
    }.get(lname, "identity")


def _parse_gb(model):
    from sklearn.dummy import DummyClassifier, DummyRegressor

    name = type(model).__name__
    init = model.init_
    if not (isinstance(init, str) and init == "zero") and not isinstance(
            init, DummyClassifier | DummyRegressor):
        raise ValueError(
            f"{name} has init={type(init).__name__}: a non-constant init estimator makes "
            "the baseline depend on the row, which TreeSHAP cannot explain; use "
            "init=None (a constant prior) or init='zero'.")
    n_features = int(model.n_features_in_)
    base = model._raw_predict_init(np.zeros((1, n_features)))[0].astype(np.float64)
    K = model.estimators_.shape[1]
    trees = []
    for i in range(model.estimators_.shape[0]):
        for k in range(K):
            t = model.estimators_[i, k].tree_
            v = t.value[:, 0, :1].astype(np.float64) * model.learning_rate
            trees.append(_leaf_tree(t, v, k))
    if hasattr(model, "classes_"):
        names = [str(c) for c in model.classes_]
        if K == 1:
            names = names[1:]
    else:
        names = ["y"]
    link = _link_from_loss(model._loss)
    return make_ensemble(trees, n_features=n_features, n_outputs=K, base_score=base, link=link,
                         output_names=names,
                         feature_names=getattr(model, "feature_names_in_", None),
                         model_name=name)


def _parse_hgb(model):
    name = type(model).__name__
    n_features = int(model.n_features_in_)
    pre = getattr(model, "_preprocessor", None)
    if pre is not None:
        is_cat = np.asarray(model.is_categorical_, dtype=bool)
        perm = np.concatenate([np.flatnonzero(is_cat), np.flatnonzero(~is_cat)])
        transform = HGBInputTransform(pre, perm)
    else:
        perm = np.arange(n_features)
        transform = None
    K = int(model.n_trees_per_iteration_)
    trees = []
    for it in model._predictors:
        for k, pred in enumerate(it):
            nodes = pred.nodes
            bitsets = pred.raw_left_cat_bitsets
            leaf = nodes["is_leaf"].astype(bool)
            left = np.where(leaf, -1, nodes["left"].astype(np.int64))
            right = np.where(leaf, -1, nodes["right"].astype(np.int64))
            is_cat = nodes["is_categorical"].astype(bool) & ~leaf
            cats = {}
            for i in np.flatnonzero(is_cat):
                words = bitsets[nodes["bitset_idx"][i]]
                bits = np.unpackbits(words.astype("<u4").view(np.uint8), bitorder="little")
                cats[int(i)] = np.flatnonzero(bits)
            trees.append({
                "children_left": left,
                "children_right": right,
                "feature": np.where(leaf, -1, perm[nodes["feature_idx"]]),
                "threshold": np.where(leaf | is_cat, 0.0, nodes["num_threshold"]),
                "mode": np.where(is_cat, MODE_CAT, MODE_LE64),
                "missing": MISSING_NAN,
                "default_left": nodes["missing_go_to_left"].astype(bool),
                "cover": nodes["count"].astype(np.float64),
                "value": np.where(leaf, nodes["value"], 0.0)[:, None],
                "output": k,
                "cats": cats,
            })
    base = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
    if hasattr(model, "classes_"):
        names = [str(c) for c in model.classes_]
        if K == 1:
            names = names[1:]
    else:
        names = ["y"]
    ens = make_ensemble(trees, n_features=n_features, n_outputs=K, base_score=base,
                        link=_link_from_loss(model._loss), output_names=names,
                        feature_names=getattr(model, "feature_names_in_", None),
                        model_name=name)
    return ens, transform
