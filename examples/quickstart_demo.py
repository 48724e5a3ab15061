"""
Quick start: Shapley attributions for a model trained on the bundled Adult data
================================================================================

Fits a gradient-boosting pipeline on the bundled UCI Adult data, then computes exact
baseline Shapley values (every coalition of the 12 input columns evaluated, missing
features filled from the training mean/mode row) for a few test rows and prints them.
"""

import time

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder

from sklearn_xai.base import as_array, reference_row
from sklearn_xai.datasets import load_adult
from sklearn_xai.shapley import ImputationGame, exact_shapley

start = time.perf_counter()
X, y = load_adult(subset="train")
X = X.drop(columns=["fnlwgt", "education"])
X_test, _ = load_adult(subset="test")
X_test = X_test[X.columns]
categorical = list(X.select_dtypes("category").columns)
model = make_pipeline(
    ColumnTransformer([("cat", OrdinalEncoder(handle_unknown="use_encoded_value",
                                              unknown_value=-1, encoded_missing_value=-1),
                        categorical)], remainder="passthrough"),
    HistGradientBoostingClassifier(max_iter=100, random_state=0),
).fit(X, y)
print(f"trained on {len(X)} rows in {time.perf_counter() - start:.1f} s; "
      f"test accuracy {model.score(X_test, load_adult(subset='test')[1]):.3f}")


def f(Z):
    import pandas as pd

    frame = pd.DataFrame(Z, columns=X.columns).astype(X.dtypes.to_dict())
    return model.predict_proba(frame)[:, [1]]


rows = as_array(X_test.iloc[:5])
game = ImputationGame(f, rows, reference_row(X))
start = time.perf_counter()
phi, base = exact_shapley(game)
elapsed = time.perf_counter() - start
print(f"exact Shapley values of P(>50K) for 5 rows, {2 ** game.n_players} coalitions each, "
      f"{elapsed:.2f} s")
for r in range(len(rows)):
    order = np.argsort(-np.abs(phi[r, :, 0]))[:4]
    top = ", ".join(f"{X.columns[j]}={rows[r, j]} ({phi[r, j, 0]:+.3f})" for j in order)
    total = base[r, 0] + phi[r, :, 0].sum()
    print(f"row {r}: base {base[r, 0]:.3f} -> P(>50K) {total:.3f}; top: {top}")
