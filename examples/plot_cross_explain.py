"""
How stable is an explanation? Refits with ``cross_explain``
============================================================

An attribution explains one fitted model. Trained on other rows of the same data, the
model would differ, and so would its explanation. :func:`~sklearn_xai.model_selection.cross_explain`
refits the explainer's model on each training fold (or on bootstrap resamples), explains
the same rows with every refit, and reports the mean attribution with two standard
errors: the explainer's own sampling error (``std_sampling``) and the spread across refits
(``std_refit``), plus how often each feature is in a row's top ``k`` (``top_k_share``) and
how often its sign agrees with the mean (``sign_agreement``).

Here: a logistic regression of credit risk on the seven numeric columns of the German
Credit data, explained by marginal SHAP (exact, 50 background rows) for four applicants,
refitted on 50 bootstrap resamples.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_xai import KnockoffSHAP
from sklearn_xai.datasets import load_german_credit
from sklearn_xai.model_selection import cross_explain

X, y = load_german_credit()
X = X.select_dtypes("number").astype(float)
model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
explainer = KnockoffSHAP(model, imputation="marginal", algorithm="exact",
                         background=X.iloc[:50].to_numpy())
rows = X.iloc[:4]
res = cross_explain(explainer, X, y, explain_X=rows, n_resamples=50, k=2, random_state=0)

# %%
# One row per (applicant, feature). The explainer is exact, so ``std_sampling`` is 0 and
# all the uncertainty comes from refitting.

frame = res.to_frame()
print(frame[frame["row"] == rows.index[0]].round(4).to_string(index=False))

# %%
# The mean attributions of the first applicant with 95 % intervals from the refits, and
# the share of refits in which each feature is among the applicant's top two. A large
# attribution with a wide interval, or a top-2 share well below 1, is not a stable
# finding about this applicant.

values, err = res.values[0], 1.96 * res.std_refit[0] * np.sqrt(len(res.per_refit))
order = np.argsort(np.abs(values))
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4), sharey=True)
ax1.barh(np.arange(len(order)), values[order], xerr=err[order])
ax1.set_yticks(np.arange(len(order)), [res.feature_names[j] for j in order])
ax1.axvline(0, color="grey", lw=0.8)
ax1.set_xlabel("SHAP value of P(good credit), mean over refits\n"
               "(bars: 95 % of one refit's spread)")
ax2.barh(np.arange(len(order)), res.top_k_share[0][order], color="tab:green")
ax2.set_xlim(0, 1)
ax2.set_xlabel("share of refits with the feature in the top 2")
fig.tight_layout()
plt.show()
