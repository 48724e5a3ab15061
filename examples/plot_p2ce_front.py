"""
P2CE: a Pareto front of plausible counterfactuals
=================================================

:class:`sklearn_xai.P2CERecourse` returns, for a rejected applicant, every Pareto-optimal
counterfactual on an action grid under several costs (largest std-scaled change, number of
changed features, mean std-scaled change), keeping only points an isolation forest fitted
on the training data calls inliers. With a tree ensemble the probability bound is exact,
so the front is the one an enumeration of the whole grid would give.

This example shows one front as a table and as a scatter plot of two of its costs.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split

from sklearn_xai import P2CERecourse
from sklearn_xai.datasets import load_adult

# %%
# Data: numeric Adult features, as in the P2CE paper's Adult preprocessing
X_all, y_all = load_adult(subset="train")
X = pd.DataFrame({
    "age": X_all["age"].astype(float),
    "education_num": X_all["education_num"].astype(float),
    "capital_gain": X_all["capital_gain"].astype(float),
    "capital_loss": X_all["capital_loss"].astype(float),
    "hours_per_week": X_all["hours_per_week"].astype(float),
    "is_married": X_all["marital_status"].astype(str).str.startswith("Married").astype(float),
})
X_train, X_test, y_train, y_test = train_test_split(X, y_all, test_size=0.5, random_state=0,
                                                    stratify=y_all)
model = GradientBoostingClassifier(n_estimators=60, max_depth=3, random_state=0)
model.fit(X_train, y_train)

# %%
# Fit the explainer (the model is already trained, so it is frozen) and explain one
# rejected applicant. Age never changes; capital gain may only increase.
explainer = P2CERecourse(FrozenEstimator(model), max_changes=3, immutable_features=["age"],
                         monotone={"capital_gain": +1}, random_state=0)
explainer.fit(X_train)
print("bound:", explainer.bound_, "| level order:",
      [X.columns[j] for j in explainer.feature_order_])

rejected = X_test[model.predict(X_test) == 0].iloc[:20]
sizes = np.bincount(explainer.explain(rejected).counterfactuals["query"], minlength=20)
query = rejected.iloc[[int(np.argmax(sizes))]]  # the applicant with the largest front
result = explainer.explain(query)

# %%
# The front as a table: one row per Pareto-optimal counterfactual, best first
front = result.to_frame()
cols = list(X.columns) + ["prediction", "max_distance", "n_changes", "mean_distance",
                          "outlier_score"]
print(query.to_string())
print(front[cols].round(3).to_string())
print(result.summary())
print("nodes expanded:", result.extras["nodes_expanded"][0],
      "| pruning counters:", result.extras["counters"][0])

# %%
# Two of the costs against each other; colour = number of changed features
fig, ax = plt.subplots(figsize=(5, 4))
sc = ax.scatter(front["max_distance"], front["mean_distance"], c=front["n_changes"],
                cmap="viridis", s=60, edgecolor="k")
for k, (a, b) in enumerate(zip(front["max_distance"], front["mean_distance"])):
    ax.annotate(str(k), (a, b), textcoords="offset points", xytext=(4, 4))
ax.set_xlabel("max_distance (largest change / training std)")
ax.set_ylabel("mean_distance (mean change / training std)")
ax.set_title("P2CE front of one rejected applicant")
fig.colorbar(sc, ax=ax, label="n_changes", ticks=np.unique(front["n_changes"]))
fig.tight_layout()
plt.show()
