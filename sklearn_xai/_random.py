"""Keyed random streams: the one source of per-row randomness.

The rule
--------
A row's random draws depend only on ``(base_seed, row content)``:

* ``base_seed`` is one integer drawn from ``random_state`` per call
  (:func:`sklearn_xai._utils.draw_base_seed`);
* the row's content gives a 64-bit key, :func:`row_keys`;
* :func:`stream_seeds` mixes the two into the seed of a SplitMix64 stream (Steele, Lea &
  Flood, OOPSLA 2014), a counter-based generator: draw ``k`` (1-based) of the stream
  seeded ``s`` is ``mix64(s + k * GOLDEN)``.

So splitting the rows into batches or workers, reordering them, explaining a subset or
duplicating a row never changes a row's draws, and equal rows get equal draws. Different
uses of randomness within one call take separate streams by deriving their own base seed,
``stream_seeds(base_seed, TAG)`` for a constant ``TAG``.

The same stream is available vectorised in numpy (:func:`stream_uniforms`) and, for
compiled kernels, as numba functions (:func:`splitmix64_next`,
:func:`splitmix64_uniform`, :func:`mix_seed`); both give bit-identical numbers.
"""

from __future__ import annotations

import hashlib
import numbers
import operator
import struct

import numpy as np
from numba import njit

_MASK = 0xFFFFFFFFFFFFFFFF
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_CANONICAL_NAN = np.uint64(0x7FF8000000000000)
_CANONICAL_NAN_INT = int(_CANONICAL_NAN)
_F64 = struct.Struct("<d")
_U64 = struct.Struct("<Q")
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53


# --------------------------------------------------------------------------- numba


@njit(cache=True, inline="always")
def splitmix64_mix(z):
    """SplitMix64 finaliser of one uint64 (a bijection of 64-bit integers)."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def mix_seed(seed, key):
    """Seed of the stream of ``key`` under ``seed`` (both uint64); equals
    :func:`stream_seeds` ``(seed, key)``."""
    return splitmix64_mix(splitmix64_mix(np.uint64(key) + GOLDEN)
                          ^ splitmix64_mix(np.uint64(seed) + GOLDEN))


@njit(cache=True, inline="always")
def splitmix64_next(state):
    """Next uint64 of the stream whose counter is ``state[0]`` (a uint64 array), which is
    advanced in place."""
    state[0] += GOLDEN
    return splitmix64_mix(state[0])


@njit(cache=True, inline="always")
def splitmix64_uniform(state):
    """Next float64 of the stream ``state[0]``, uniform on the open interval (0, 1)."""
    return (np.float64(splitmix64_next(state) >> np.uint64(11)) + 0.5) * _TO_UNIT


# --------------------------------------------------------------------------- numpy


def _as_uint64(values):
    """uint64 array of integers given as Python ints (any sign or size: taken modulo
    2**64), numpy integers or uint64 keys."""
    if not isinstance(values, (np.ndarray, np.generic)):
        values = np.asarray(values, dtype=object)  # big Python ints must not become floats
    arr = np.asarray(values)
    if arr.dtype == np.uint64:
        return arr
    if arr.dtype.kind == "i":
        return arr.astype(np.int64).view(np.uint64)
    if arr.dtype.kind in "ub":
        return arr.astype(np.uint64)
    if arr.dtype.kind == "O":
        try:
            flat = [operator.index(v) & _MASK for v in arr.ravel()]
        except TypeError as exc:
            raise TypeError(f"Stream keys and seeds must be integers ({exc}).") from None
        return np.asarray(flat, dtype=np.uint64).reshape(arr.shape)
    raise TypeError(f"Stream keys and seeds must be integers; got dtype {arr.dtype}.")


def mix64(z):
    """SplitMix64 finaliser on a uint64 array (vectorised :func:`splitmix64_mix`)."""
    z = np.array(z, dtype=np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= _M1
        z ^= z >> np.uint64(27)
        z *= _M2
        z ^= z >> np.uint64(31)
    return z


def stream_seeds(base_seed, keys):
    """Seeds of the keyed streams: ``mix64(mix64(key + GOLDEN) ^ mix64(base_seed + GOLDEN))``.

    Parameters
    ----------
    base_seed : int or numpy integer
        The call's seed (any integer, taken modulo 2**64).
    keys : int or array-like of int
        One key per stream, e.g. :func:`row_keys`.

    Returns
    -------
    numpy.uint64 or ndarray of uint64 with the shape of ``keys``
    """
    scalar = np.ndim(keys) == 0
    k = _as_uint64(np.atleast_1d(keys) if scalar else keys)
    base = _as_uint64([base_seed])
    with np.errstate(over="ignore"):
        out = mix64(mix64(k + GOLDEN) ^ mix64(base + GOLDEN)[0])
    return out[0] if scalar else out


def stream_uniforms(seeds, n_draws):
    """The first ``n_draws`` uniforms on (0, 1) of each stream.

    Parameters
    ----------
    seeds : array-like of uint64, shape (n_streams,)
        From :func:`stream_seeds`.
    n_draws : int

    Returns
    -------
    ndarray of shape (n_streams, n_draws)
        Row ``i`` equals ``n_draws`` calls of :func:`splitmix64_uniform` on a state holding
        ``seeds[i]``.
    """
    seeds = _as_uint64(np.atleast_1d(seeds))
    with np.errstate(over="ignore"):
        z = seeds[:, None] + np.arange(1, n_draws + 1, dtype=np.uint64)[None, :] * GOLDEN
    z = mix64(z) >> np.uint64(11)
    u = z.astype(np.float64)
    u += 0.5
    u *= _TO_UNIT
    return u


# --------------------------------------------------------------------------- row keys


def _fold(codes):
    """One key per row of a (n, d) uint64 array of cell codes: a SplitMix64 chain over the
    columns, started from the row length (so a longer row is other content)."""
    n, d = codes.shape
    with np.errstate(over="ignore"):
        h = mix64(np.full(n, d, dtype=np.uint64) + GOLDEN)
        for j in range(d):
            h = mix64((h ^ codes[:, j]) + GOLDEN)
    return h


def _float_codes(values):
    """The bits of float64 values with -0.0 as 0.0 and every NaN as one NaN."""
    values = np.asarray(values, dtype=np.float64) + 0.0  # -0.0 + 0.0 == +0.0
    codes = np.ascontiguousarray(values).view(np.uint64).copy()
    codes[np.isnan(values)] = _CANONICAL_NAN
    return codes


def _tagged_digest(tag, payload):
    """64-bit digest of a tag and a length-prefixed payload (stable across processes)."""
    h = hashlib.blake2b(digest_size=8, person=b"sklearn_xai.row")
    h.update(tag)
    h.update(len(payload).to_bytes(8, "little"))
    h.update(payload)
    return int.from_bytes(h.digest(), "little")


def _cell_code(v):
    """64-bit code of one value of an object row: real numbers by their normalised float64
    bits, other values by a digest of their type and value."""
    if isinstance(v, (bool, np.bool_)):
        return _tagged_digest(b"bool", b"\x01" if v else b"\x00")
    if isinstance(v, numbers.Integral):
        return _tagged_digest(b"int", str(int(v)).encode())
    if isinstance(v, numbers.Real):
        f = float(v)
        if f != f:
            return _CANONICAL_NAN_INT
        return _U64.unpack(_F64.pack(f + 0.0))[0]  # -0.0 + 0.0 == +0.0
    if isinstance(v, str):
        return _tagged_digest(b"str", v.encode("utf-8", "surrogatepass"))
    if isinstance(v, bytes):
        return _tagged_digest(b"bytes", v)
    if v is None:
        return _tagged_digest(b"None", b"")
    t = type(v)
    return _tagged_digest(f"{t.__module__}.{t.__qualname__}".encode(),
                          repr(v).encode("utf-8", "surrogatepass"))


def _as_2d(X):
    if hasattr(X, "iloc") and getattr(X, "ndim", 0) == 2:  # DataFrame
        import pandas as pd

        if all(pd.api.types.is_numeric_dtype(t) and not isinstance(t, pd.CategoricalDtype)
               and not pd.api.types.is_extension_array_dtype(t) for t in X.dtypes):
            return X.to_numpy(dtype=np.float64)
        return X.to_numpy(dtype=object)
    return np.asarray(X)


def row_keys(X):
    """A 64-bit key per row, computed from the row's content only.

    Numeric rows are keyed by their values as float64 (so an int, float32 or float64 copy
    of a row gets the same key), with ``-0.0`` taken as ``0.0`` and every NaN as one NaN.
    Object rows (and DataFrames with non-numeric columns) are keyed value by value: real
    numbers as above, integers, booleans, strings, bytes and ``None`` by a digest of their
    type and value, and any other value by a digest of its type's name and its ``repr``
    (stable across processes for values whose ``repr`` is, e.g. dates; not for objects
    whose ``repr`` shows their address). A categorical value is keyed as the category
    itself. Python's ``hash`` is never used, so the keys do not change between processes
    or after pickling.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_rows, n_features)

    Returns
    -------
    keys : ndarray of uint64, shape (n_rows,)
        Equal rows get equal keys; different rows get different keys except with
        probability about ``n_rows**2 / 2**65``.
    """
    A = _as_2d(X)
    if A.ndim != 2:
        raise ValueError(f"row_keys expects a 2-D array of rows; got shape {A.shape}.")
    if A.dtype.kind in "biuf":
        codes = _float_codes(A)
    else:
        A = A.astype(object, copy=False)
        codes = np.fromiter((_cell_code(v) for v in A.ravel()), dtype=np.uint64,
                            count=A.size).reshape(A.shape)
    return _fold(codes)
