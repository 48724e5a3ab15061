"""
Every plot of the result objects
================================

:class:`~sklearn_xai.Attribution` draws the usual views of feature attributions with
matplotlib: waterfall, force, bar, beeswarm, dependence (scatter), heatmap, decision and
interaction matrix; :class:`~sklearn_xai.Counterfactuals` draws a diff table and parallel
coordinates of a query's counterfactuals. Wherever the values carry standard errors
(``std``, from a sampled estimator) the plots draw +-1.96 standard-error bars.

The model is a gradient-boosting classifier on the bundled German credit data, whose
category labels are long (``"critical account / other credits existing (not at this
bank)"``): the plots wrap such labels onto two lines and ellipsize them beyond that.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.compose import make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder

from sklearn_xai import P2CERecourse, ShearExplainer, TreeShapExplainer
from sklearn_xai.datasets import load_german_credit

X, y = load_german_credit()
categorical = list(X.select_dtypes("category").columns)
encode = make_column_transformer((OrdinalEncoder(), categorical), remainder="passthrough")
model = make_pipeline(encode, HistGradientBoostingClassifier(
    max_iter=50, categorical_features=list(range(len(categorical))), random_state=0))
model.fit(X, y)

# %%
# Exact TreeSHAP values and interaction values (the margin of the "good credit" class) of
# 100 applicants. ``explain_interactions`` returns the SHAP values with the interaction
# values in ``extras["interactions"]``, which the dependence plot and the interaction
# matrix read.
explainer = TreeShapExplainer(FrozenEstimator(model), model_output="raw").fit(X)
attribution = explainer.explain_interactions(X.iloc[:100])

fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
attribution.plot_waterfall(row=2, ax=axes[0], max_display=8)
attribution.plot_bar(ax=axes[1])
fig.tight_layout()

# %%
# A force plot shows the same row as one band ending at the output: red pushes up, blue
# pushes down.
attribution.plot_force(row=2)
plt.tight_layout()

# %%
# Dependence plot: the duration's value against its attribution, coloured by the feature
# it interacts with most (largest mean absolute TreeSHAP interaction value). Without
# interaction values the colour is chosen by a documented heuristic, named on the colour
# bar.
fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
attribution.plot_dependence("duration_months", ax=axes[0])
attribution.plot_dependence("checking_status", ax=axes[1])
fig.tight_layout()

# %%
# The interaction matrix: mean absolute interaction value of each pair, main effects on
# the diagonal.
attribution.plot_interactions(max_display=8)
plt.tight_layout()

# %%
# Heatmap of every row, the rows ordered by hierarchical (Ward) clustering of their
# attributions; above it each row's output, right the mean absolute value per feature.
attribution.plot_heatmap(max_display=8)

# %%
# Decision plot: each row's path from the base value to its output.
attribution.plot_decision(rows=slice(0, 25), max_display=12)
plt.tight_layout()

# %%
# Standard errors: SHEAR estimates the Shapley values by sampling, with ``n_rounds``
# independent rounds whose spread gives each value's standard error. The force,
# decision (and every other) plot draws them as +-1.96 standard-error bars.
shear = ShearExplainer(FrozenEstimator(model), n_evals=16, n_rounds=4,
                       response_method="decision_function", random_state=0).fit(X)
sampled = shear.explain(X.iloc[:6])
print("largest standard error:", float(np.nanmax(sampled.std)))
sampled.plot_force(row=2)
plt.tight_layout()
sampled.plot_decision(max_display=10)
plt.tight_layout()

# %%
# Counterfactuals: P2CE's Pareto front for one rejected applicant (numeric features and
# the checking account; age never changes), as a diff table and as parallel coordinates
# (features, then the costs P2CE minimises).
numeric = X.select_dtypes("number").astype(float)
numeric["checking_status"] = X["checking_status"].astype(str)
small = make_pipeline(
    make_column_transformer((OrdinalEncoder(), ["checking_status"]), remainder="passthrough"),
    HistGradientBoostingClassifier(max_iter=40, max_depth=3, random_state=0))
small.fit(numeric, y)
recourse = P2CERecourse(FrozenEstimator(small), max_changes=3, immutable_features=["age"],
                        random_state=0).fit(numeric)
rejected = numeric[small.predict(numeric) == 0].iloc[:20]
front = recourse.explain(rejected)
query = int(np.argmax(np.bincount(front.counterfactuals["query"], minlength=len(rejected))))
front.plot_diff(query)
front.plot_parallel_coordinates(query)
plt.tight_layout()
plt.show()
