"""Faults found by the reliability audit in the torch adapter and ShearExplainer.

One test per finding; each failed before its fix. Oracles: Shapley values by enumerating
every coalition (written here), the module's own forward in eval mode, and the state the
user's module had before it was explained.
"""

import copy
import itertools
import pickle

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression

from sklearn_xai import ShearExplainer

from ._oracles import baseline_shapley

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.timeout(120)


def _X(n=20, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _mlp(d=4, dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d, 8), torch.nn.Softplus(),
                               torch.nn.Linear(8, 1)).to(dtype)


def _f(module):
    """The module's own output in float64 numpy, evaluated on an eval-mode copy."""
    module = copy.deepcopy(module).eval()

    def f(Z):
        with torch.no_grad():
            return module(torch.as_tensor(np.asarray(Z, float), dtype=torch.float64)).numpy()

    return f


def _flags(module):
    return [m.training for m in module.modules()]


def _devices(module):
    return [t.device for t in itertools.chain(module.parameters(), module.buffers())]


def _state(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _assert_same_state(module, state):
    now = module.state_dict()
    assert now.keys() == state.keys()
    for k, v in state.items():
        assert torch.equal(now[k], v), k


# ----------------------------------------------------------------------------- finding 6


def test_user_module_flags_buffers_and_device_unchanged_by_fit_and_explain():
    X = _X()
    torch.manual_seed(1)
    module = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Softplus(),
        torch.nn.Dropout(0.5), torch.nn.Linear(8, 1)).double()
    module.train()
    module[3].eval()  # mixed flags must come back exactly as they were
    flags, devices, state = _flags(module), _devices(module), _state(module)
    oracle = _f(module)
    for n_evals, cooperators in [(16, "auto"), (4, "hessian"), (4, "finite_difference")]:
        e = ShearExplainer(module, n_evals=n_evals, cooperators=cooperators,
                           random_state=0).fit(X)
        a = e.explain(X[:3])
        assert _flags(module) == flags
        assert _devices(module) == devices
        _assert_same_state(module, state)  # batch-norm statistics not updated
        if n_evals == 16:  # exact regime: the eval-mode module's Shapley values
            np.testing.assert_allclose(
                a.values, baseline_shapley(oracle, X[:3], e.reference_), atol=1e-10)
    # concurrent forwards from worker threads restore the flags once, at the end
    with parallel_config("threading", n_jobs=2):
        ShearExplainer(module, n_evals=4, batch_size=1, n_jobs=2,
                       random_state=0).fit(X).explain(X[:6])
    assert _flags(module) == flags
    _assert_same_state(module, state)


def test_skorch_module_training_flag_restored():
    skorch = pytest.importorskip("skorch")
    X = _X(40).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    torch.manual_seed(0)
    net = skorch.NeuralNetClassifier(
        torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Softplus(), torch.nn.Dropout(0.3),
                            torch.nn.Linear(6, 2)),
        max_epochs=1, train_split=None, verbose=0).fit(X, y)
    net.module_.train()
    e = ShearExplainer(FrozenEstimator(net), n_evals=4, random_state=0).fit(X)
    e.explain(X[:3])
    assert all(_flags(net.module_))


@pytest.mark.parametrize(
    "device", ["meta", "nonsense", "cuda:1000" if torch.cuda.is_available() else "cuda"])
def test_invalid_device_is_a_value_error_and_leaves_the_module_usable(device):
    X = _X()
    module = _mlp()
    module.train()
    flags, devices = _flags(module), _devices(module)
    with torch.no_grad():
        before = module(torch.as_tensor(X[:3])).numpy()
    with pytest.raises(ValueError, match="device"):
        ShearExplainer(module, n_evals=4, device=device).fit(X)
    assert _devices(module) == devices
    assert _flags(module) == flags
    with torch.no_grad():  # the user's network still runs, with the same numbers
        np.testing.assert_array_equal(module(torch.as_tensor(X[:3])).numpy(), before)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_device_move_works_on_a_copy():
    X = _X()
    module = _mlp()
    devices = _devices(module)
    cpu = ShearExplainer(module, n_evals=16, device="cpu").fit(X).explain(X[:3]).values
    e = ShearExplainer(module, n_evals=16, device="cuda").fit(X)
    gpu = e.explain(X[:3]).values
    assert _devices(module) == devices
    np.testing.assert_allclose(gpu, cpu, atol=1e-10)
    e2 = pickle.loads(pickle.dumps(e))
    np.testing.assert_allclose(e2.explain(X[:3]).values, cpu, atol=1e-10)
    assert _devices(module) == devices


# ----------------------------------------------------------------------------- finding 7


def test_input_beyond_module_dtype_range_raises_naming_column_and_dtype():
    from sklearn_xai._torch import TorchModelFunction

    X = _X()
    module = _mlp(dtype=torch.float32)
    e = ShearExplainer(module, n_evals=4, random_state=0).fit(X)
    Xb = X[:3].copy()
    Xb[1, 2] = 1e39  # finite in float64, inf in float32
    with pytest.raises(ValueError, match=r"float32.*column\(s\) \[2\]"):
        e.explain(Xb)
    with pytest.raises(ValueError, match=r"float32.*column\(s\) \[2\]"):
        TorchModelFunction(module)(Xb)
    ref = X.mean(0)
    ref[0] = -1e39
    with pytest.raises(ValueError, match=r"background.*float32.*column\(s\) \[0\]"):
        ShearExplainer(module, n_evals=4, background=ref).fit(X)
    # the largest float32 is still accepted by the adapter (no false alarm at the edge)
    lin = TorchModelFunction(torch.nn.Linear(1, 1, bias=False))
    with torch.no_grad():
        lin.module.weight.fill_(0.5)
    big = float(np.finfo(np.float32).max)
    np.testing.assert_allclose(lin(np.array([[big]])), [[big / 2]], rtol=1e-6)


# ----------------------------------------------------------------------------- finding 5


class _NaNAbove(torch.nn.Module):
    """Sum of the features, NaN where the first one exceeds 2."""

    def forward(self, x):
        out = x.sum(1, keepdim=True)
        return torch.where(x[:, :1] > 2.0, torch.full_like(out, float("nan")), out)


class _SqrtSquare(torch.nn.Module):
    """x0 x1 + sqrt(x2 ** 2) + x3: finite output, NaN derivatives where x2 = 0."""

    def forward(self, x):
        return (x[:, 0] * x[:, 1] + torch.sqrt(x[:, 2] ** 2) + x[:, 3])[:, None]


def test_non_finite_module_output_raises_naming_module_and_rows():
    from sklearn_xai._torch import TorchModelFunction

    X = np.clip(_X(), -1.5, 1.5)
    e = ShearExplainer(_NaNAbove(), n_evals=4, batch_size=2, random_state=0).fit(X)
    Xb = X[:5].copy()
    Xb[3, 0] = 3.0
    with pytest.raises(ValueError, match=r"_NaNAbove.*NaN or infinite.*row\(s\) 3\b"):
        e.explain(Xb)
    with pytest.raises(ValueError, match=r"_NaNAbove.*NaN or infinite.*positions 3\b"):
        TorchModelFunction(_NaNAbove())(Xb)
    # finite rows still explain, and exactly (the model is additive; float32 module)
    a = e.explain(X[:4])
    np.testing.assert_allclose(a.values, X[:4] - e.reference_, atol=1e-5)


def test_non_finite_hessian_cross_contribution_raises():
    X = _X(seed=3)
    X[:, 2] = np.abs(X[:, 2]) + 0.5
    module = _SqrtSquare().double()
    e = ShearExplainer(module, n_evals=4, cooperators="hessian", random_state=0).fit(X)
    e.explain(X[:3])  # finite Hessians: fine
    Xb = X[:3].copy()
    Xb[2, 2] = 0.0  # d sqrt(u) / du at u = 0 is inf, times du / dx2 = 0
    with pytest.raises(ValueError, match=r"Hessian.*_SqrtSquare.*row\(s\) 2\b.*finite_difference"):
        e.explain(Xb)
    fd = ShearExplainer(module, n_evals=4, cooperators="finite_difference",
                        random_state=0).fit(X).explain(Xb)
    assert np.isfinite(fd.values).all()


# ----------------------------------------------------------------------------- finding 12


def test_wrong_module_input_width_names_both_widths():
    X = _X(d=4)
    with pytest.raises(ValueError, match=r"5 input features.*X has 4") as info:
        ShearExplainer(_mlp(d=5), n_evals=4).fit(X)
    assert "mat1" not in str(info.value)

    class Custom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = _mlp(d=5)

        def forward(self, x):
            return self.inner(x)

    with pytest.raises(ValueError, match=r"Custom.*4 columns"):
        ShearExplainer(Custom(), n_evals=4).fit(X)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_reference_names_the_parameter(bad):
    X = _X()
    ref = X.mean(0)
    ref[1] = bad
    with pytest.raises(ValueError, match=r"background.*column\(s\) \[1\]"):
        ShearExplainer(_mlp(), n_evals=4, background=ref).fit(X)
    linear = FrozenEstimator(LinearRegression().fit(X, X @ np.arange(4.0)))
    with pytest.raises(ValueError, match=r"background.*column\(s\) \[1\]"):
        ShearExplainer(linear, n_evals=4, background=ref).fit(X)


def test_nan_reference_allowed_for_a_model_that_takes_nan():
    from sklearn.ensemble import HistGradientBoostingRegressor

    X = _X(80)
    y = X[:, 0] + X[:, 1] * X[:, 2]
    model = FrozenEstimator(HistGradientBoostingRegressor(max_iter=20).fit(X, y))
    ref = X.mean(0)
    ref[1] = np.nan  # "missing" is a legitimate baseline for this model
    e = ShearExplainer(model, n_evals=16, background=ref).fit(X)
    a = e.explain(X[:3])
    np.testing.assert_allclose(
        a.values, baseline_shapley(model.predict, X[:3], ref), atol=1e-10)


@pytest.mark.parametrize("shape", [(5,), (2, 4), (1, 4, 1)])
def test_wrong_shape_reference_names_the_parameter(shape):
    X = _X()
    with pytest.raises(ValueError, match=r"background must be one row, of shape \(4,\)"):
        ShearExplainer(_mlp(), n_evals=4, background=np.zeros(shape)).fit(X)


def test_non_numeric_reference_for_a_torch_module_names_the_parameter():
    X = _X()
    with pytest.raises(ValueError, match="background"):
        ShearExplainer(_mlp(), n_evals=4, background=["a", 0, 0, 0]).fit(X)


# ----------------------------------------------------------------------------- finding 14


def test_random_state_docstring_matches_what_is_accepted():
    doc = ShearExplainer.__doc__
    line = next(ln for ln in doc.splitlines() if ln.strip().startswith("random_state :"))
    assert "Generator" not in line
    assert "int" in line and "RandomState" in line and "None" in line
    X = _X(d=6)
    with pytest.raises(ValueError, match="random_state"):
        ShearExplainer(_mlp(d=6), n_evals=4,
                       random_state=np.random.default_rng(0)).fit(X)
    # what the docstring lists is accepted and reproducible
    runs = [ShearExplainer(_mlp(d=6), n_evals=4, random_state=rs).fit(X).explain(X[:3]).values
            for rs in (0, 0, np.random.RandomState(5), np.random.RandomState(5))]
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_array_equal(runs[2], runs[3])
