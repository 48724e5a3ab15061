"""Type aliases of the public signatures (used in annotations only).

Every module that uses them has ``from __future__ import annotations`` and imports this
module under ``if TYPE_CHECKING:``, so it is never imported at run time.
"""

from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias

import numpy as np

#: ``feature_groups=``: None, a list of lists of column names/indices, or a dict name -> list
FeatureGroups: TypeAlias = Sequence[Sequence[int | str]] | Mapping[str, Sequence[int | str]] | None

#: ``response_method=`` of the explainers
ResponseMethod: TypeAlias = Literal["auto", "predict_proba", "decision_function", "predict"]

#: ``random_state=``: an int seed, a ``RandomState`` instance or None
RandomStateLike: TypeAlias = int | np.random.RandomState | None

#: ``family=`` of :func:`sklearn_xai.testing.make_known_model`
KnownFamily: TypeAlias = Literal["linear", "forest", "hist_gradient_boosting", "xgboost",
                                 "lightgbm"]
