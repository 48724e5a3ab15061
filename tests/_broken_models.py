"""A real classifier whose ``predict_proba`` is broken on purpose, for the fault tests."""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression

FAULTS = ["nan", "inf", "neg_inf", "one_column", "three_columns", "too_few_rows", "flat"]


class BrokenClassifier(ClassifierMixin, BaseEstimator):
    """Logistic regression whose ``predict_proba`` has the defect ``fault``.

    NaN/inf faults hit the rows whose first feature exceeds ``threshold``; shape faults
    (one or three columns, one row too few, a 1-D output) hit every call.
    """

    def __init__(self, fault="nan", threshold=1.0):
        self.fault = fault
        self.threshold = threshold

    def fit(self, X, y):
        self.inner_ = LogisticRegression().fit(X, y)
        self.classes_ = self.inner_.classes_
        self.n_features_in_ = self.inner_.n_features_in_
        return self

    def predict(self, X):
        return self.inner_.predict(X)

    def predict_proba(self, X):
        P = self.inner_.predict_proba(X)
        hit = np.asarray(X, dtype=float)[:, 0] > self.threshold
        if self.fault == "nan":
            P[hit] = np.nan
        elif self.fault == "inf":
            P[hit, 1] = np.inf
        elif self.fault == "neg_inf":
            P[hit, 0] = -np.inf
        elif self.fault == "one_column":
            P = P[:, 1:]
        elif self.fault == "three_columns":
            P = np.hstack([P, P[:, :1]])
        elif self.fault == "too_few_rows":
            P = P[: max(1, len(P) - 1)]
        elif self.fault == "flat":
            P = P.ravel()
        return P
