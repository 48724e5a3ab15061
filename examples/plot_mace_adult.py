"""
MACE counterfactuals for an Adult income query
==============================================

:class:`~sklearn_xai.recourse.MaceRecourse` (Yang et al. 2022, arXiv 2205.15540) answers
"what would have to change for this person to be predicted ``>50K``?" with a few small,
diverse edits of the person's own record. Here we explain a gradient-boosting pipeline
trained on the bundled Adult data, keep ``race``, ``sex``, ``native_country``,
``relationship`` and the capital gain/loss fixed (a windfall is not advice), only let
``age`` grow, cap weekly hours at 60, and print the counterfactuals as a diff.
"""

# %%
# Train a model on the raw DataFrame (categoricals are one-hot encoded inside the pipeline).
import matplotlib.pyplot as plt
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

from sklearn_xai.datasets import load_adult
from sklearn_xai.recourse import MaceRecourse

X, y = load_adult(drop_missing=True)
X = X.drop(columns=["fnlwgt", "education_num"])
cat = [c for c in X.columns if str(X[c].dtype) == "category"]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
model = make_pipeline(
    ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), cat)],
        remainder="passthrough",
    ),
    HistGradientBoostingClassifier(max_iter=150, random_state=0),
).fit(X_train, y_train)
print(f"test accuracy: {model.score(X_test, y_test):.3f}")

# %%
# Fit the explainer on the training rows (one HNSW index per predicted class), with the
# constraints a real recourse needs.
mace = MaceRecourse(
    FrozenEstimator(model),
    method="rl",
    n_counterfactuals=3,
    immutable_features=[
        "race", "sex", "native_country", "relationship", "capital_gain", "capital_loss"
    ],
    monotone={"age": "increase"},
    feature_ranges={"hours_per_week": (1, 60)},
    random_state=0,
).fit(X_train)

# %%
# Explain the first test person predicted ``<=50K``.
query = X_test[model.predict(X_test) == 0].iloc[[0]]
result = mace.explain(query)
print(query.T)
print()
print(result.summary())

# %%
# Every counterfactual is re-predicted by the model: its probability of ``>50K``.
frame = result.to_frame()
print(frame[["query", "prediction", "valid"]].join(result.costs))

# %%
# The same diff as a small figure: one row per counterfactual, one cell per change.
diffs = result.diff(0)
fig, ax = plt.subplots(figsize=(8, 0.6 + 0.5 * max(1, len(diffs))))
ax.axis("off")
cells = [[f"CF {k + 1}", "; ".join(d), f"{p:.2f}"] for k, (d, p) in
         enumerate(zip(diffs, result.predictions))]
table = ax.table(cellText=cells or [["-", "no counterfactual found", "-"]],
                 colLabels=["", "changes", "P(>50K)"], loc="center", cellLoc="left",
                 colWidths=[0.08, 0.77, 0.15])
table.auto_set_font_size(False)
table.set_fontsize(9)
ax.set_title("MACE counterfactuals for one Adult query")
plt.show()
