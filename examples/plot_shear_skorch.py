"""
=================================================
SHEAR on a skorch network: values and cooperators
=================================================

:class:`~sklearn_xai.ShearExplainer` estimates Shapley values with a handful of model
evaluations per feature: for each feature it picks the few other features that interact
most with it (its *cooperators*, ranked by the input Hessian), enumerates their coalitions
exactly and samples the rest.

Here a small softplus network (skorch) learns a target with a strong interaction between
``x0`` and ``x1`` and a three-way one between ``x2``, ``x3`` and ``x4``; ``x5`` is noise.
We explain the class-1 logit of one row with 8 evaluations per feature and compare with the
exact values (64 = 2^6 evaluations per feature enumerate every coalition).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.frozen import FrozenEstimator
from skorch import NeuralNetClassifier

from sklearn_xai import ShearExplainer

rng = np.random.default_rng(0)
X = rng.normal(size=(600, 6)).astype(np.float32)
score = 2 * X[:, 0] * X[:, 1] + X[:, 2] * X[:, 3] * X[:, 4] + X[:, 2]
y = (score > 0).astype(np.int64)

torch.manual_seed(0)
module = torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.Softplus(),
                             torch.nn.Linear(32, 32), torch.nn.Softplus(),
                             torch.nn.Linear(32, 2))
net = NeuralNetClassifier(module, criterion=torch.nn.CrossEntropyLoss,
                          optimizer=torch.optim.Adam, lr=0.01, max_epochs=15,
                          batch_size=64, train_split=None, verbose=0)
net.fit(X, y)
print(f"training accuracy: {(net.predict(X) == y).mean():.3f}")

# %%
# Explain the class-1 logit (``response_method="decision_function"`` for a skorch
# classifier trained with ``CrossEntropyLoss``) with 8 evaluations per feature, i.e.
# ``K = log2(8) - 1 = 2`` cooperators per feature, picked by the Hessian at the row.
names = [f"x{j}" for j in range(6)]
shear = ShearExplainer(FrozenEstimator(net), n_evals=8, response_method="decision_function",
                       cooperators="hessian", random_state=0).fit(X)
exact = ShearExplainer(FrozenEstimator(net), n_evals=64,
                       response_method="decision_function").fit(X)
row = np.array([[1.2, -1.0, 1.5, 1.0, -1.3, 0.8]], dtype=np.float32)
a = shear.explain(row)
ref = exact.explain(row)

for j, coop in enumerate(a.extras["cooperators"][0]):
    print(f"{names[j]}: cooperators {[names[k] for k in coop]}, SHEAR {a.values[0, j]:+.4f}, "
          f"exact {ref.values[0, j]:+.4f}")
print(f"absolute error (sum over features): {np.abs(a.values - ref.values).sum():.5f}")

# %%
# The cross-contribution matrix used for the selection (``-inf`` on the diagonal) and the
# values side by side.
eta = a.extras["cross_contribution"][0].copy()
eta[~np.isfinite(eta)] = np.nan
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
im = ax0.imshow(eta, cmap="viridis")
ax0.set_xticks(range(6), names)
ax0.set_yticks(range(6), names)
for j, coop in enumerate(a.extras["cooperators"][0]):
    for k in coop:
        ax0.text(k, j, "*", ha="center", va="center", color="white", fontsize=14)
ax0.set_title("cross-contribution (* = selected cooperator)")
fig.colorbar(im, ax=ax0, shrink=0.8)
pos = np.arange(6)
ax1.barh(pos - 0.2, ref.values[0], height=0.4, label="exact (64 evals/feature)")
ax1.barh(pos + 0.2, a.values[0], height=0.4, label="SHEAR (8 evals/feature)")
ax1.set_yticks(pos, names)
ax1.invert_yaxis()
ax1.set_xlabel("contribution to the class-1 logit")
ax1.legend(loc="lower right")
fig.tight_layout()
plt.show()
