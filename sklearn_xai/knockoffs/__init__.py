"""Model-X knockoff samplers: Gaussian (MVR, SDP, equicorrelated) and sequential."""

from ._gaussian import GaussianKnockoffs
from ._sequential import SequentialKnockoffs

__all__ = ["GaussianKnockoffs", "SequentialKnockoffs"]
