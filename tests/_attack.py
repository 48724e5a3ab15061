"""The out-of-distribution attack on perturbation explainers (Slack et al. 2020).

An adversarial model behaves in a biased way on real rows and innocuously on the hybrid
rows that marginal Shapley explainers create; a random-forest detector tells the two
apart. A test and benchmark helper (tests/test_knockoff_shap.py, benchmarks/bench_knockoff.py)
of :class:`~sklearn_xai.shapley.KnockoffSHAP` / :class:`~sklearn_xai.shapley.KnockoffSAGE`,
not part of the library; examples/plot_knockoff_attack.py carries its own copy of the
classifier and the data set-up, so that it runs from an installed package.
"""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.cluster import KMeans
from sklearn.ensemble import RandomForestClassifier
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

__all__ = ["make_hybrids", "OODAdversaryClassifier", "OODAdversaryRegressor",
           "compas_attack_data", "german_attack_data"]


def make_hybrids(X, background, n_hybrids, n_replace, rng):
    """Slack-style hybrid rows and whether each one equals a real row.

    Each hybrid starts from a random row of ``X``; then ``n_replace`` times a random
    feature (drawn with replacement) is overwritten with that feature of a random
    ``background`` row.

    Returns
    -------
    H : ndarray of shape (n_hybrids, n_features)
    is_real : ndarray of bool, shape (n_hybrids,)
        True where the hybrid coincides exactly with a row of ``X``.
    """
    X = np.asarray(X, dtype=np.float64)
    background = np.asarray(background, dtype=np.float64)
    n, p = X.shape
    H = X[rng.integers(n, size=n_hybrids)].copy()
    rows = np.arange(n_hybrids)
    for _ in range(n_replace):
        j = rng.integers(p, size=n_hybrids)
        b = rng.integers(background.shape[0], size=n_hybrids)
        H[rows, j] = background[b, j]
    real = {r.tobytes() for r in np.ascontiguousarray(X)}
    is_real = np.array([h.tobytes() in real for h in np.ascontiguousarray(H)])
    return H, is_real


def kmeans_centres(X, k):
    """k-means(k) centres (``random_state=0``), computed on one thread.

    Small k-means fits are much slower with many OpenMP threads on a busy machine.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return KMeans(n_clusters=k, random_state=0, n_init=10).fit(X).cluster_centers_


class _OODAdversary(BaseEstimator):
    _biased_name = "biased"

    def __init__(self, biased_feature=0, innocuous_feature=1, *, background=10,
                 n_hybrids=50000, repeat_real=10, n_replace=None, balanced=False,
                 n_estimators=100, min_samples_leaf=1, detector=None, random_state=None):
        self.biased_feature = biased_feature
        self.innocuous_feature = innocuous_feature
        self.background = background
        self.n_hybrids = n_hybrids
        self.repeat_real = repeat_real
        self.n_replace = n_replace
        self.balanced = balanced
        self.n_estimators = n_estimators
        self.min_samples_leaf = min_samples_leaf
        self.detector = detector
        self.random_state = random_state

    def fit(self, X, y=None):
        """Train the detector on real rows against hybrid rows.

        ``background``: an int ``k`` uses the k-means(k) centres of ``X``
        (``random_state=0`` as in Slack et al.), an array is used as it is.
        ``balanced=True`` draws as many hybrids as there are real rows (after
        ``repeat_real``) instead of ``n_hybrids``.
        """
        X = np.asarray(X, dtype=np.float64)
        rng = check_random_state(self.random_state)
        gen = np.random.default_rng(rng.randint(0, 2**31 - 1))
        if isinstance(self.background, Integral):
            self.background_ = kmeans_centres(X, int(self.background))
        else:
            self.background_ = np.asarray(self.background, dtype=np.float64)
        real = np.repeat(X, self.repeat_real, axis=0)
        n_h = real.shape[0] if self.balanced else self.n_hybrids
        n_replace = X.shape[1] if self.n_replace is None else self.n_replace
        H, is_real = make_hybrids(X, self.background_, n_h, n_replace, gen)
        data = np.vstack([real, H])
        label = np.r_[np.ones(real.shape[0]), is_real.astype(float)]
        detector_seed = rng.randint(0, 2**31 - 1)
        if self.detector is None:
            detector = RandomForestClassifier(
                n_estimators=self.n_estimators, min_samples_leaf=self.min_samples_leaf,
                random_state=detector_seed, n_jobs=1)
        else:  # any classifier; its random_state (if any) seeded like the forest's
            detector = clone(self.detector)
            if "random_state" in detector.get_params():
                detector.set_params(random_state=detector_seed)
        self.detector_ = detector.fit(data, label)
        self.n_features_in_ = X.shape[1]
        self._fit_extra(X, y)
        return self

    def _fit_extra(self, X, y):
        pass

    def in_distribution(self, X):
        """Detector probability that each row is real, shape (n_samples,)."""
        check_is_fitted(self)
        proba = self.detector_.predict_proba(np.asarray(X, dtype=np.float64))
        classes = list(self.detector_.classes_)
        return proba[:, classes.index(1.0)] if 1.0 in classes else np.zeros(len(proba))

    def fidelity(self, X):
        """Share of rows where the adversary behaves like the biased model."""
        return float(np.mean(self.in_distribution(X) >= 0.5))


class OODAdversaryClassifier(ClassifierMixin, _OODAdversary):
    """Slack et al.'s adversarial classifier (labels 0/1).

    On rows the detector calls real: ``1`` iff ``x[biased_feature] >= 0`` (e.g.
    standardised Gender: male); on detected hybrids: ``1`` iff
    ``x[innocuous_feature] <= 0`` (loan rate at most its mean), or, for a pair of
    innocuous features, iff exactly one of them is above 0 (their exclusive or, Slack et
    al.'s two-feature attack). ``predict_proba`` is the one-hot of ``predict``.
    ``detector``: the classifier telling real rows from hybrids (cloned; ``None``: a random
    forest of ``n_estimators`` trees).
    """

    def _fit_extra(self, X, y):
        self.classes_ = np.array([0, 1])

    def predict(self, X):
        X = np.asarray(X, dtype=np.float64)
        biased = (X[:, self.biased_feature] >= 0).astype(int)
        if np.ndim(self.innocuous_feature) == 0:
            innocuous = (X[:, self.innocuous_feature] <= 0).astype(int)
        else:
            i, j = self.innocuous_feature
            innocuous = ((X[:, i] > 0) ^ (X[:, j] > 0)).astype(int)
        return np.where(self.in_distribution(X) >= 0.5, biased, innocuous)

    def predict_proba(self, X):
        pred = self.predict(X)
        return np.column_stack([1 - pred, pred]).astype(float)


class OODAdversaryRegressor(RegressorMixin, _OODAdversary):
    """The SAGE simulation's adversary: ``x[biased]`` on real rows, ``x[innocuous]`` else."""

    def predict(self, X):
        X = np.asarray(X, dtype=np.float64)
        return np.where(self.in_distribution(X) >= 0.5, X[:, self.biased_feature],
                        X[:, self.innocuous_feature])


GERMAN_NUMERIC = ("Age", "LoanDuration", "LoanAmount")


def german_attack_data(test_size=0.1, random_state=2022):
    """Slack et al.'s German Credit setup: 28 standardised features, 90/10 split.

    ``PurposeOfLoan`` is dropped, ``Gender`` is 1 for Male and 0 for Female, and a
    ``StandardScaler`` fitted on the training rows scales both parts.

    Returns
    -------
    X_train, X_test : ndarray of shape (n, 28)
    y_train, y_test : ndarray of shape (n,)
    feature_names : list of str
    categorical : ndarray of bool, shape (28,)
        Every column except Age, LoanDuration and LoanAmount (the paper's encoding).
    """
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from sklearn_xai.datasets import load_german_credit

    X, y = load_german_credit(processed=True)
    X = X.drop(columns="PurposeOfLoan")
    X["Gender"] = (X["Gender"].astype(str) == "Male").astype(float)
    names = [str(c) for c in X.columns]
    X_train, X_test, y_train, y_test = train_test_split(
        X.to_numpy(dtype=np.float64), np.asarray(y), test_size=test_size,
        random_state=random_state)
    scaler = StandardScaler().fit(X_train)
    categorical = np.array([n not in GERMAN_NUMERIC for n in names])
    return (scaler.transform(X_train), scaler.transform(X_test), y_train, y_test, names,
            categorical)


def sage_simulation(rho, random_state=0, *, n_train=1000, n_explain=500, n_knockoffs=10,
                    snr=2.0, algorithm="exact", n_permutations=None, n_estimators=100,
                    sampler=None, shared_background=True):
    """One replicate of the SAGE simulation of Blesch, Wright & Watson (2023).

    Four equicorrelated standard Gaussian features (correlation ``rho``),
    ``y = sum(x) + noise`` with ``Var(noise) = Var(sum x) / snr``. The adversary
    returns ``x1`` on rows its detector calls real and ``x2`` otherwise; the detector
    (``n_estimators`` trees, ``min_samples_leaf=5``) is trained on a sample of its own
    (``n_train`` rows, repeated twice) against as many k-means(10) hybrids. SAGE is then
    computed on ``n_explain`` fresh rows with knockoff imputation (Gaussian knockoffs
    fitted on the training sample) and with marginal imputation: the detector's own
    k-means centres when ``shared_background`` (the attacker knows the explainer's
    background, as in Slack et al.), else k-means(10) centres of the explained rows.

    Returns
    -------
    dict
        ``knockoff`` and ``marginal``: SAGE values (4,); ``fidelity``: share of
        explained rows the detector calls real.
    """
    from sklearn.frozen import FrozenEstimator

    from sklearn_xai.knockoffs import GaussianKnockoffs
    from sklearn_xai.shapley import KnockoffSAGE

    rng = np.random.default_rng(random_state)
    p = 4
    cov = rho * np.ones((p, p)) + (1 - rho) * np.eye(p)
    X = rng.multivariate_normal(np.zeros(p), cov, size=n_train + n_explain)
    signal = X.sum(axis=1)
    y = signal + rng.normal(scale=np.sqrt(signal.var() / snr), size=len(signal))
    X_train, X_explain, y_explain = X[:n_train], X[n_train:], y[n_train:]
    seed = int(rng.integers(2**31 - 1))
    adv = OODAdversaryRegressor(0, 1, background=10, repeat_real=2, n_replace=p,
                                balanced=True, n_estimators=n_estimators,
                                min_samples_leaf=5, random_state=seed).fit(X_train)
    frozen = FrozenEstimator(adv)
    common = {"algorithm": algorithm, "n_permutations": n_permutations,
                  "tol": None if n_permutations else 0.025, "random_state": seed}
    ko = KnockoffSAGE(frozen, sampler=sampler or GaussianKnockoffs(),
                      n_knockoffs=n_knockoffs, **common).fit(X_train)
    centres = adv.background_ if shared_background else kmeans_centres(X_explain, 10)
    mg = KnockoffSAGE(frozen, imputation="marginal", background=centres, **common).fit(X_train)
    return {
        "knockoff": ko.explain(X_explain, y_explain).importances,
        "marginal": mg.explain(X_explain, y_explain).importances,
        "fidelity": adv.fidelity(X_explain),
    }


COMPAS_FEATURES = ("age", "priors_count", "length_of_stay", "juv_fel_count",
                   "juv_misd_count", "c_charge_degree", "sex", "race")


def compas_attack_data(random_state=0, data_home=None):
    """Slack et al.'s COMPAS setup: binary race, two random unrelated columns, standardised.

    From :func:`sklearn_xai.datasets.load_shared_dataset` ("compas", ProPublica's filter,
    6,172 rows): ``age``, ``priors_count``, ``length_of_stay``, ``juv_fel_count``,
    ``juv_misd_count``, ``c_charge_degree`` (1 = felony), ``sex`` (1 = male), ``race``
    (1 = African-American), plus ``unrelated_column_one`` and ``unrelated_column_two``,
    independent fair coin flips drawn with ``random_state`` (the innocuous features of the
    attack). Every column is standardised on all rows.

    Returns
    -------
    X : ndarray of shape (6172, 10)
    y : ndarray of shape (6172,)
        ``two_year_recid``.
    feature_names : list of str
    """
    from sklearn.preprocessing import StandardScaler

    from sklearn_xai.datasets import load_shared_dataset

    X, y = load_shared_dataset("compas", data_home=data_home)
    rng = np.random.default_rng(random_state)
    columns = {
        "age": X["age"], "priors_count": X["priors_count"],
        "length_of_stay": X["length_of_stay"], "juv_fel_count": X["juv_fel_count"],
        "juv_misd_count": X["juv_misd_count"],
        "c_charge_degree": X["c_charge_degree"].astype(str) == "F",
        "sex": X["sex"].astype(str) == "Male",
        "race": X["race"].astype(str) == "African-American",
    }
    data = np.column_stack([np.asarray(v, dtype=np.float64) for v in columns.values()]
                           + [rng.integers(0, 2, size=(len(X), 2)).astype(np.float64)])
    names = list(columns) + ["unrelated_column_one", "unrelated_column_two"]
    return StandardScaler().fit_transform(data), np.asarray(y), names
