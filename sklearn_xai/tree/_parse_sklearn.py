"""Read fitted scikit-learn tree models into a :class:`FlatEnsemble`.

Supported (and their subclasses): ``DecisionTreeClassifier/Regressor``,
``RandomForest*``, ``ExtraTrees*`` (also multi-output), ``GradientBoosting*`` (constant
init only), ``HistGradientBoosting*`` (numeric, native categorical and missing values)
and ``IsolationForest`` (the average path length). Nothing here knows about Shapley values.

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


def _class_fractions(est, n_classes):
    """Leaf class fractions of a classifier tree, (n_nodes, sum(n_classes)).

    Columns run over the targets, then over each target's classes.
    """
    t = est.tree_
    if not np.array_equal(np.atleast_1d(est.n_classes_), n_classes):
        raise ValueError("a tree of the forest saw fewer classes than the forest")
    cols = []
    for k, nk in enumerate(n_classes):
        v = t.value[:, k, :nk].astype(np.float64)
        s = v.sum(axis=1, keepdims=True)
        cols.append(np.divide(v, s, out=np.zeros_like(v), where=s > 0))
    return np.hstack(cols)


def _parse_classic(model, ests, name, n_features, fnames):
    """DecisionTree*, RandomForest*, ExtraTrees* (single or multi-output)."""
    scale = 1.0 / len(ests)
    if hasattr(model, "classes_"):
        if isinstance(model.classes_, list):  # multi-output: one class list per target
            n_classes = np.asarray([len(c) for c in model.classes_])
            names = [f"target {k}, class {c}" for k, cls in enumerate(model.classes_)
                     for c in cls]
        else:
            n_classes = np.asarray([len(model.classes_)])
            names = [str(c) for c in model.classes_]
        trees = [_leaf_tree(est.tree_, _class_fractions(est, n_classes) * scale, -1)
                 for est in ests]
        n_out, raw_space = int(n_classes.sum()), "probability"
    else:
        n_out = int(model.n_outputs_)
        names = [f"y{k}" for k in range(n_out)] if n_out > 1 else ["y"]
        trees = [_leaf_tree(est.tree_, est.tree_.value[:, :, 0].astype(np.float64) * scale, -1)
                 for est in ests]
        raw_space = "margin"
    return make_ensemble(trees, n_features=n_features, n_outputs=n_out,
                         base_score=np.zeros(n_out), link="identity", output_names=names,
                         feature_names=fnames, model_name=name, raw_space=raw_space)


def _parse_isolation_forest(model, name, n_features, fnames):
    """IsolationForest: the average path length ``E[h(x)]`` over the trees.

    A leaf holding ``n`` training rows at depth ``d`` adds ``d + c(n)``, ``c`` the average
    path length of an unsuccessful binary-search-tree search (as scikit-learn and shap
    do); ``score_samples(x) = -2 ** (-E[h(x)] / c(max_samples))``.
    """
    from sklearn.ensemble._iforest import _average_path_length

    scale = 1.0 / len(model.estimators_)
    trees = []
    for est, feats in zip(model.estimators_, model.estimators_features_, strict=True):
        t = est.tree_
        depth = np.zeros(t.node_count)
        for i in range(t.node_count):  # children always follow their parent
            if t.children_left[i] >= 0:
                depth[t.children_left[i]] = depth[t.children_right[i]] = depth[i] + 1
        leaf = t.children_left < 0
        v = np.where(leaf, depth + _average_path_length(t.n_node_samples), 0.0)
        tree = _leaf_tree(t, (v * scale)[:, None], -1, cover_attr="n_node_samples")
        tree["feature"] = np.where(leaf, -1, np.asarray(feats)[np.maximum(t.feature, 0)])
        trees.append(tree)
    return make_ensemble(trees, n_features=n_features, n_outputs=1, base_score=np.zeros(1),
                         link="identity", output_names=["path_length"], feature_names=fnames,
                         model_name=name, raw_space="path_length")


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
        IsolationForest,
    )
    from sklearn.ensemble._forest import BaseForest
    from sklearn.tree import BaseDecisionTree

    name = type(model).__name__
    n_features = int(model.n_features_in_)
    fnames = getattr(model, "feature_names_in_", None)
    if isinstance(model, IsolationForest):
        return _parse_isolation_forest(model, name, n_features, fnames), None
    if isinstance(model, BaseDecisionTree | BaseForest):
        ests = model.estimators_ if isinstance(model, BaseForest) else [model]
        return _parse_classic(model, ests, name, n_features, fnames), None
    if isinstance(model, GradientBoostingClassifier | GradientBoostingRegressor):
        return _parse_gb(model), None
    if isinstance(model, HistGradientBoostingClassifier | HistGradientBoostingRegressor):
        return _parse_hgb(model)
    raise TypeError(
        f"TreeShapExplainer cannot explain {name}: it is not a supported scikit-learn tree "
        "model (DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*, "
        "HistGradientBoosting*, IsolationForest, or a subclass of one).")


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
    names = _boosting_output_names(model, K)
    link = _link_from_loss(model._loss)
    return make_ensemble(trees, n_features=n_features, n_outputs=K, base_score=base, link=link,
                         output_names=names,
                         feature_names=getattr(model, "feature_names_in_", None),
                         model_name=name)


def _boosting_output_names(model, K):
    """A boosted model's output names: its classes (the positive one alone when it
    boosts one margin, ``K == 1``), or ``["y"]`` for a regressor."""
    if not hasattr(model, "classes_"):
        return ["y"]
    names = [str(c) for c in model.classes_]
    return names[1:] if K == 1 else names


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
    names = _boosting_output_names(model, K)
    ens = make_ensemble(trees, n_features=n_features, n_outputs=K, base_score=base,
                        link=_link_from_loss(model._loss), output_names=names,
                        feature_names=getattr(model, "feature_names_in_", None),
                        model_name=name)
    return ens, transform
