"""
Auditing a model for off-manifold behaviour
===========================================

A reviewer is handed a fitted credit model and asks: can its SHAP explanation be
trusted? Slack et al. (2020) showed that a model can be built to fool marginal SHAP: it
discriminates on ``Gender`` for rows that look like real applicants, and switches to the
harmless ``LoanRateAsPercentOfIncome`` on the hybrid rows a marginal explainer queries (the
explained row with some features copied from k-means background rows), which a random
forest detector recognises.

:class:`~sklearn_xai.OffManifoldAudit` looks at the data first (a knockoff sampler, the
marginal explainer's background and a detector of its hybrid rows), then compares, for
any fitted model, the marginal and knockoff SHAP importances and the model's behaviour on
real rows and on detected hybrid rows. Here it audits the fooling model and an honest
logistic regression on the same processed German Credit data (28 standardised features),
150 rows each.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.cluster import KMeans
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sklearn_xai import OffManifoldAudit
from sklearn_xai.datasets import load_german_credit

X, y = load_german_credit(processed=True)
X = X.drop(columns="PurposeOfLoan")
X["Gender"] = (X["Gender"].astype(str) == "Male").astype(float)
X = X.astype(float)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.1, random_state=2022)
scaler = StandardScaler().fit(X_train)
X_train = pd.DataFrame(scaler.transform(X_train), columns=X.columns)
X_test = pd.DataFrame(scaler.transform(X_test), columns=X.columns)


# %%
# The fooling model
# -----------------
# The scaffolding of Slack et al.: a detector trained on real rows against hybrids with
# k-means(10) centres' values, the biased rule where it says "real", the innocuous one
# elsewhere.


class ScaffoldingClassifier(ClassifierMixin, BaseEstimator):
    """1 iff Gender >= 0 on rows its detector calls real, iff LoanRate <= 0 on others."""

    def __init__(self, biased=0, innocuous=1, n_hybrids=20000, random_state=0):
        self.biased = biased
        self.innocuous = innocuous
        self.n_hybrids = n_hybrids
        self.random_state = random_state

    def fit(self, X, y=None):
        X = np.asarray(X, dtype=float)
        rng = np.random.default_rng(self.random_state)
        centres = KMeans(10, n_init=10, random_state=0).fit(X).cluster_centers_
        H = X[rng.integers(len(X), size=self.n_hybrids)]
        rows = np.arange(self.n_hybrids)
        for _ in range(X.shape[1]):  # features replaced at random, with replacement
            j = rng.integers(X.shape[1], size=self.n_hybrids)
            H[rows, j] = centres[rng.integers(10, size=self.n_hybrids), j]
        real = np.repeat(X, 5, axis=0)
        self.detector_ = RandomForestClassifier(100, random_state=0).fit(
            np.vstack([real, H]), np.r_[np.ones(len(real)), np.zeros(len(H))])
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        looks_real = self.detector_.predict_proba(X)[:, 1] >= 0.5
        return np.where(looks_real, X[:, self.biased] >= 0,
                        X[:, self.innocuous] <= 0).astype(int)

    def predict_proba(self, X):
        p = self.predict(X)
        return np.column_stack([1 - p, p]).astype(float)


columns = list(X.columns)
attack = ScaffoldingClassifier(columns.index("Gender"),
                               columns.index("LoanRateAsPercentOfIncome")).fit(X_train)
honest = LogisticRegression(max_iter=1000).fit(X_train, y_train)

# %%
# The audit
# ---------
# ``fit`` sees the data only; ``audit`` takes any fitted model. Every choice is a
# default: k-means(10) background, knockoffs of a Gaussian copula, a random forest
# detector, ``min_ratio=2``, Holm at ``alpha=0.05``.

audit = OffManifoldAudit(random_state=0).fit(X_train)
print(f"detector AUC (held out): {audit.detector_auc_:.3f}")
rows = X_train.iloc[:150]
attack_result = audit.audit(attack, rows)
honest_result = audit.audit(honest, rows)
print(attack_result.summary())
print()
print(honest_result.summary())

# %%
# The evidence table of the fooling model: Gender is the most important feature with
# knockoff imputation, and its marginal importance is less than half as large (marginal
# SHAP puts the innocuous loan rate first); replacing Gender changes the output on real
# rows, hardly on the hybrid rows the detector flags. The logistic regression's
# importances shift too (knockoffs shrink correlated features), but it uses its
# features off the manifold as it does on it, so it is not flagged.

cols = ["marginal_importance", "knockoff_importance", "marginal_rank", "knockoff_rank",
        "real_effect", "hybrid_effect", "p_adjusted"]
print(attack_result.features[cols].head(5).round(4).to_string())

# %%
# Marginal and knockoff importances side by side, with 95 % intervals, for the five
# features most important under either imputation.

fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
for ax, (name, result) in zip(axes, [("fooling model", attack_result),
                                     ("logistic regression", honest_result)]):
    f = result.features
    top = f.loc[f[["marginal_importance", "knockoff_importance"]].max(axis=1)
                .sort_values(ascending=False).index[:5]]
    pos = np.arange(len(top))[::-1]
    ax.barh(pos + 0.2, top["marginal_importance"], 0.38, xerr=1.96 * top["marginal_se"],
            label="marginal")
    ax.barh(pos - 0.2, top["knockoff_importance"], 0.38, xerr=1.96 * top["knockoff_se"],
            label="knockoff")
    ax.set_yticks(pos, top.index)
    verdict = "flagged" if result.flagged else "not flagged"
    ax.set_title(f"{name}: {verdict} (p = {result.p_value:.2g})")
    ax.set_xlabel("mean |SHAP|")
axes[0].legend(loc="lower right")
fig.tight_layout()
plt.show()
