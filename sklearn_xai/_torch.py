"""Torch model adapter: forward passes, gradients and Hessians of torch modules and skorch nets.

torch and skorch are optional: nothing here imports them at module import time. The
adapter follows the :class:`~sklearn_xai._model.ModelFunction` protocol (``f(X) -> ndarray
(n, n_outputs) float64``, ``f.batched(X, batch_size)``, ``output_names``) and adds
derivatives with respect to the input, computed with ``torch.func`` on the model's device.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import threading

import numpy as np

from ._model import NON_FINITE_ADVICE, is_skorch_net, module_dtype, non_finite_rows
from ._model import output_names as _output_names
from ._utils import unwrap_frozen

__all__ = ["TorchModelFunction", "is_torch_model"]

_TORCH_EXTRA = "pip install sklearn-xai[torch]"


def _import_torch():
    try:
        import torch
        import torch.func  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised only without torch
        raise ImportError(
            f"This feature needs PyTorch, which is not installed; install the 'torch' extra: "
            f"{_TORCH_EXTRA}"
        ) from exc
    return torch


def is_torch_model(model) -> bool:
    """Whether ``model`` (or the estimator inside a ``FrozenEstimator``) is a torch module
    or a skorch net, i.e. whether :class:`TorchModelFunction` can wrap it.

    Never imports torch or skorch: a model of those libraries implies they are imported.
    """
    model = unwrap_frozen(model)
    if is_skorch_net(model):
        return True
    if "torch" not in sys.modules:
        return False
    import torch

    return isinstance(model, torch.nn.Module)


def _resolve_device(torch, device, what="device"):
    """The canonical ``torch.device`` of ``device`` (``cuda`` -> ``cuda:0``), checked to be
    usable here; a ValueError naming ``what`` otherwise."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{what}={str(device)!r} is not a torch device; use None (the module's own "
            "device), 'cpu' or 'cuda'.") from exc
    if dev.type == "meta":
        raise ValueError(
            f"{what}={str(device)!r}: tensors on the 'meta' device hold no data, so the "
            "module cannot be evaluated there; use None (the module's own device), 'cpu' or "
            "'cuda' (a module built on 'meta' must be materialised first).")
    try:
        return torch.empty(0, device=dev).device
    except (RuntimeError, AssertionError, ValueError) as exc:  # e.g. no CUDA here
        raise ValueError(
            f"{what}={str(device)!r} is not available on this machine ({exc}); use None "
            "(the module's own device) or 'cpu'.") from exc


# Modules evaluated in eval mode right now: id -> [depth, saved training flags]. One
# registry for all adapters, so concurrent forwards (threads, or two adapters of the same
# module) restore the flags only when the last of them ends.
_EVAL_LOCK = threading.Lock()
_EVAL_STATE = {}


@contextlib.contextmanager
def _eval_mode(module):
    """Evaluate ``module`` in eval mode, then restore every submodule's ``training`` flag."""
    key = id(module)
    with _EVAL_LOCK:
        entry = _EVAL_STATE.get(key)
        if entry is None:
            entry = _EVAL_STATE[key] = [0, [(m, m.training) for m in module.modules()]]
            if any(flag for _, flag in entry[1]):
                module.eval()
        entry[0] += 1
    try:
        yield module
    finally:
        with _EVAL_LOCK:
            entry[0] -= 1
            if entry[0] == 0:
                del _EVAL_STATE[key]
                for m, flag in entry[1]:
                    m.training = flag


def _ELEMENTWISE_ACTIVATIONS(nn):
    """Activation modules that act element by element (their Jacobian is diagonal)."""
    return (
        nn.Softplus, nn.Tanh, nn.Sigmoid, nn.SiLU, nn.GELU, nn.ELU, nn.CELU, nn.SELU,
        nn.Mish, nn.LogSigmoid, nn.Softsign, nn.Tanhshrink, nn.ReLU, nn.LeakyReLU,
        nn.ReLU6, nn.Hardtanh, nn.Hardswish, nn.Hardsigmoid,
    )


class TorchModelFunction:
    """Picklable function ``f(X) -> (n, n_outputs)`` of a torch module or a fitted skorch net,
    with input gradients and Hessians.

    Parameters
    ----------
    model : torch.nn.Module, or fitted skorch ``NeuralNet`` (``NeuralNetClassifier``,
        ``NeuralNetRegressor``, ``NeuralNetBinaryClassifier``), or a ``FrozenEstimator``
        wrapping one
        For a skorch net the adapter uses ``net.module_`` (in eval mode) and, unless
        ``device`` is given, ``net.device``. The module must take one float tensor of
        shape ``(n, n_features)``.
    output : {"raw", "proba"}, default="raw"
        What the outputs are. ``"raw"``: the module's own output, i.e. the logits for a
        skorch classifier trained with ``CrossEntropyLoss`` / ``BCEWithLogitsLoss``, and the
        probabilities for one whose module ends in a softmax (skorch's default ``NLLLoss``
        setup). ``"proba"``: skorch's ``predict_proba`` output, i.e. the net's
        ``predict_nonlinearity`` applied to the module output (skorch nets only); gradients
        and Hessians are then those of the probabilities.
    output_columns : array-like of int or None, default=None
        Columns of the (2-D) output to keep, e.g. ``[1]`` for the class-1 logit. ``None``
        keeps all. A 1-D module output counts as one column.
    output_names : list of str or None, default=None
        Names of the kept outputs; default ``"output_<column>"``.
    device : str, torch.device or None, default=None
        Where the module runs. ``None``: ``net.device`` for a skorch net, else the device
        of the module's parameters (the default torch device for a parameter-free module).
        A device that is not usable here (``"meta"``, ``"cuda"`` without CUDA, a
        misspelling) is a ``ValueError``, raised before anything is moved.
    batch_size : int or None, default=None
        Rows per forward pass (and per vectorised derivative pass); ``None`` is one pass.

    Notes
    -----
    The caller's module is never changed. Every forward runs in eval mode (dropout off,
    batch-norm statistics frozen, as ``net.predict`` does), and afterwards each
    submodule's ``training`` flag is set back to what it was. When the module is not
    already on ``device``, a copy of it is moved there (on the first call) and used from
    then on. Inputs are cast to the dtype of the module's parameters; a finite value that
    this cast would turn into an infinity (e.g. ``1e39`` for a float32 module) is a
    ``ValueError`` naming its columns. A NaN or infinite module output is a
    ``ValueError`` naming the module and the rows. Outputs are returned as float64 numpy
    arrays. Pickling stores a CPU copy of the module, so a pickle made on a GPU machine
    loads anywhere; the copy is moved back to ``device`` on the next call.
    """

    def __init__(
        self,
        model,
        *,
        output="raw",
        output_columns=None,
        output_names=None,
        device=None,
        batch_size=None,
    ):
        torch = _import_torch()
        model = unwrap_frozen(model)
        self.nonlinearity = None
        if is_skorch_net(model):
            if not hasattr(model, "module_"):
                raise ValueError(
                    "The skorch net is not initialized/fitted: it has no 'module_'. Fit it first."
                )
            module = model.module_
            default_device = model.device
            if output == "proba":
                if not hasattr(model, "_get_predict_nonlinearity"):
                    raise ValueError(
                        f"output='proba' needs a skorch classifier; got {type(model).__name__}."
                    )
                self.nonlinearity = model._get_predict_nonlinearity()
        elif isinstance(model, torch.nn.Module):
            module = model
            default_device = None
            if output == "proba":
                raise ValueError(
                    "output='proba' is only defined for skorch classifiers; for a plain torch "
                    "module explain output='raw' (add the softmax/sigmoid to the module to "
                    "explain probabilities)."
                )
        else:
            raise TypeError(
                "TorchModelFunction needs a torch.nn.Module or a fitted skorch net; got "
                f"{type(model).__name__}."
            )
        if output not in ("raw", "proba"):
            raise ValueError(f"output must be 'raw' or 'proba'; got {output!r}.")
        what = "device"
        if device is None and default_device is not None:
            device, what = default_device, "device (None: the skorch net's device)"
        if device is None:
            param = next(iter(module.parameters()), None)
            device = param.device if param is not None else torch.get_default_device()
            what = "device (None: the device of the module's parameters)"
        _resolve_device(torch, device, what)  # fail before anything is moved
        self.module = module
        self.model_name = type(module).__name__
        if module is not model:
            self.model_name += f" (module_ of {type(model).__name__})"
        self.output = output
        self.device = str(torch.device(device))
        self.output_columns = None if output_columns is None else np.asarray(output_columns, int)
        self._output_names = None if output_names is None else list(output_names)
        if batch_size is not None and (int(batch_size) != batch_size or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer or None; got {batch_size!r}.")
        self.batch_size = batch_size
        self._placed = False
        self._owns_module = False  # a private copy may be moved; the caller's module never

    # ----------------------------------------------------------------------------- state
    def __getstate__(self):
        state = self.__dict__.copy()
        module = state["module"]
        param = next(iter(module.parameters()), None)
        if param is not None and param.device.type != "cpu":
            state["module"] = copy.deepcopy(module).to("cpu")
            state["_owns_module"] = True
        state["_placed"] = False
        return state

    # ----------------------------------------------------------------------------- helpers
    def _module(self):
        """The module on ``device``: the caller's own, or a private copy moved there."""
        torch = _import_torch()
        if not self._placed:
            target = _resolve_device(torch, self.device)
            module = self.module
            tensors = list(module.parameters()) + list(module.buffers())
            if any(t.device != target for t in tensors):
                if not self._owns_module:
                    module = copy.deepcopy(module)
                try:
                    module = module.to(target)
                except NotImplementedError as exc:  # parameters on 'meta' have no data
                    raise ValueError(
                        f"The torch module {self.model_name} cannot be moved to device "
                        f"{self.device!r}: {exc}") from exc
                self.module, self._owns_module = module, True
            self._placed = True
        return self.module

    def _dtype(self):
        dtype = module_dtype(self.module)
        return _import_torch().get_default_dtype() if dtype is None else dtype

    def _to_tensor(self, X, name="X"):
        """``X`` as a tensor of the module's dtype on its device; ``name`` is used in errors."""
        torch = _import_torch()
        self._module()  # place the module before any torch.func transform is entered
        X = np.ascontiguousarray(X)  # torch refuses negative strides (X[::-1])
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (n_samples, n_features); got shape {X.shape}.")
        if X.dtype.kind not in "biuf":
            try:
                X = X.astype(np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"{name} must be numeric for the torch module {self.model_name}; got "
                    f"values of dtype {X.dtype} ({exc}).") from exc
        Xt = torch.as_tensor(X, device=torch.device(self.device))
        dtype = self._dtype()
        if Xt.dtype == dtype:
            return Xt
        cast = Xt.to(dtype)
        if not bool(torch.isfinite(cast).all()):
            over = (torch.isfinite(Xt) & ~torch.isfinite(cast)).any(dim=0)
            if bool(over.any()):
                cols = torch.nonzero(over).flatten().tolist()
                raise ValueError(
                    f"{name} has values beyond the range of the torch module's dtype {dtype} "
                    f"(largest magnitude {torch.finfo(dtype).max:.4g}) in column(s) {cols}: "
                    "cast to that dtype they would become infinite. Rescale these columns, "
                    "or convert the module to a wider dtype (e.g. module.double()).")
        return cast

    def _forward(self, x):
        """Module output for a 2-D tensor, post-processed to (n, n_kept_outputs)."""
        module = self._module()
        with _eval_mode(module):
            return self._post(module(x))

    def non_finite_error(self, where):
        """The ValueError for NaN/inf outputs ``where`` (e.g. "for rows 3, 5")."""
        return ValueError(
            f"The torch module {self.model_name} returned NaN or infinite values {where}; "
            + NON_FINITE_ADVICE.format(what="module"))

    def _check_finite(self, out):
        """Raise :meth:`non_finite_error` when ``out`` (n, ...) has a NaN or inf."""
        where = non_finite_rows(out)
        if where is not None:
            raise self.non_finite_error(where)
        return out

    def expected_n_features(self):
        """Input width of the module when its first layer is a ``nn.Linear`` (possibly in
        nested ``nn.Sequential``), else ``None``."""
        torch = _import_torch()
        m = self.module
        while type(m) is torch.nn.Sequential and len(m):
            m = m[0]
        return m.in_features if type(m) is torch.nn.Linear else None

    def probe(self, X_probe, name="X"):
        """One forward pass of the first row of ``X_probe``, with the input width checked
        first and the module's own errors turned into a ValueError naming ``name``.

        Returns
        -------
        ndarray of shape (1, n_outputs)
        """
        X_probe = np.asarray(X_probe)[:1]
        n_cols = X_probe.shape[1]
        expected = self.expected_n_features()
        if expected is not None and expected != n_cols:
            raise ValueError(
                f"The torch module {self.model_name} takes {expected} input features (its "
                f"first Linear layer has in_features={expected}), but {name} has {n_cols} "
                "columns.")
        self._to_tensor(X_probe, name=name)  # numeric, in the module's dtype's range
        try:
            return self(X_probe)
        except IndexError as exc:
            raise ValueError(
                f"The torch module {self.model_name} has no output column "
                f"{list(self.output_columns)} (target): {exc}") from exc
        except RuntimeError as exc:
            raise ValueError(
                f"The torch module {self.model_name} cannot evaluate a row of {name} with "
                f"{n_cols} columns: {exc}") from exc

    def _post(self, out):
        """The net's output nonlinearity and the kept columns, as a (n, n_kept) tensor."""
        if self.nonlinearity is not None:
            out = self.nonlinearity(out)
        out = out.reshape(out.shape[0], -1)
        if self.output_columns is not None:
            out = out[:, self.output_columns]
        return out

    def first_linear_layer(self):
        """The module as ``f(x) = tail(x W^T + b)`` when it is a plain ``nn.Sequential``
        whose first layer is a plain ``nn.Linear`` (the usual tabular MLP), else ``None``.

        Returns
        -------
        (weight, bias, tail) or None
            ``weight`` tensor (h, n_features), ``bias`` tensor (h,) or ``None``, ``tail`` a
            callable from the first layer's output (n, h) to the post-processed outputs
            (n, n_kept). Callers use it to evaluate many hybrids of the same rows from
            per-player partial products, or to take input Hessians through the tail only
            (the first layer is linear, so H_x = W^T H_z W); both are exact identities.
        """
        torch = _import_torch()
        module = self._module()
        if type(module) is not torch.nn.Sequential or len(module) == 0:
            return None
        first = module[0]
        if type(first) is not torch.nn.Linear:
            return None
        if any(m._forward_hooks or m._forward_pre_hooks for m in (module, first)):
            return None
        rest = module[1:]

        def tail(z):
            with _eval_mode(module):
                return self._post(rest(z))

        bias = None if first.bias is None else first.bias.detach()
        return first.weight.detach(), bias, tail

    def _single(self, x):
        """Output vector (n_outputs,) of one row x (n_features,); used under torch.func."""
        return self._forward(x.unsqueeze(0))[0]

    def _chunks(self, n, batch_size):
        size = batch_size or self.batch_size or max(n, 1)
        return [slice(s, min(s + size, n)) for s in range(0, n, size)]

    @property
    def output_names(self):
        """Names of the explained outputs (probed with one forward pass when not given)."""
        if self._output_names is None:
            if self.output_columns is not None:
                self._output_names = _output_names("predict", columns=self.output_columns)
            else:
                d = next((m.in_features for m in self.module.modules() if hasattr(
                    m, "in_features")), None)
                if d is None:
                    raise ValueError("Cannot infer the output width of a module without a "
                                     "Linear first layer; pass output_names.")
                width = self(np.zeros((1, d))).shape[1]
                self._output_names = _output_names("predict", width=width)
        return self._output_names

    @property
    def n_outputs(self):
        return len(self.output_names)

    def set_output_names_from(self, X_probe):
        """Check the module on the first row of ``X_probe`` (:meth:`probe`) and name the
        outputs ``predict[k]`` (``predict`` for one output; when no names were given)."""
        width = self.probe(X_probe).shape[1]
        if self._output_names is None:
            self._output_names = _output_names("predict", columns=self.output_columns,
                                              width=width)
        return self

    # ----------------------------------------------------------------------------- API
    def __call__(self, X):
        """Outputs, ndarray of shape (n_samples, n_outputs), float64."""
        return self.batched(X, None)

    def batched(self, X, batch_size=None):
        """Outputs computed ``batch_size`` rows at a time (default: the adapter's own)."""
        torch = _import_torch()
        Xt = self._to_tensor(X)
        outs = []
        with torch.inference_mode():
            for sl in self._chunks(Xt.shape[0], batch_size):
                outs.append(self._forward(Xt[sl]).to(torch.float64).cpu().numpy())
        if not outs:
            n_out = len(self.output_columns) if self.output_columns is not None else 0
            return np.zeros((0, n_out))
        return self._check_finite(np.concatenate(outs, axis=0))

    def _per_row(self, transform, X):
        """``vmap(transform(self._single))`` over the rows of ``X``, batch by batch."""
        torch = _import_torch()
        Xt = self._to_tensor(X)
        fn = torch.func.vmap(transform(self._single))
        outs = [fn(Xt[sl]).detach().to(torch.float64).cpu().numpy() for sl in
                self._chunks(Xt.shape[0], None)]
        return np.concatenate(outs, axis=0)

    def gradient(self, X):
        """Input gradients, ndarray of shape (n_samples, n_outputs, n_features), float64.

        One vectorised reverse pass per batch (``torch.func.vmap(jacrev)``).
        """
        return self._per_row(_import_torch().func.jacrev, X)

    def hessian(self, X):
        """Input Hessians, ndarray of shape (n_samples, n_outputs, n_features, n_features).

        ``torch.func.vmap(hessian)`` (forward-over-reverse): per row the cost of about
        ``n_features`` Hessian-vector products, all vectorised in one pass per batch.
        """
        return self._per_row(_import_torch().func.hessian, X)

    @staticmethod
    def _double_backward(forward, Z, V):
        """``H_o(z_q) v_q`` for every output o of ``forward``: (k, n_outputs, width).

        ``Z`` (k, width) and ``V`` (k, width) are rows and directions in ``forward``'s
        input space; one forward, then per output one backward with ``create_graph`` and
        one double backward. Rows must not interact (eval mode, the usual layers).
        """
        torch = _import_torch()
        Z = Z.detach().requires_grad_(True)
        with torch.enable_grad():
            out = forward(Z.clone())  # the module may start with an in-place activation
            n_out = out.shape[1]
            res = []
            for o in range(n_out):
                (g,) = torch.autograd.grad(out[:, o].sum(), Z, create_graph=True)
                hv = None
                if g.requires_grad:  # a model linear in z has a constant gradient
                    (hv,) = torch.autograd.grad((g * V).sum(), Z, allow_unused=True,
                                                retain_graph=o < n_out - 1)
                res.append(torch.zeros_like(Z) if hv is None else hv.detach())
        return torch.stack(res, dim=1)

    def hessian_vector_product(self, X, V, *, method="batched"):
        """Hessian-vector products ``H(x_n) v_{n,l}`` for per-row directions.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        V : ndarray of shape (n_samples, n_directions, n_features)
        method : {"batched", "vmap"}, default="batched"
            ``"batched"``: every row is repeated once per direction and the products of
            all rows come from one forward pass, one backward pass with ``create_graph``
            and one double-backward pass per output (exact, and about three times faster
            than ``"vmap"`` on CPU). It relies on the module treating rows independently,
            which holds in eval mode for the usual layers (linear, convolution, batch norm
            with frozen statistics, dropout off). ``"vmap"``: ``torch.func.vmap`` of
            ``jvp`` of ``jacrev``, which makes no such assumption.

        Returns
        -------
        HV : ndarray of shape (n_samples, n_directions, n_outputs, n_features), float64
            ``HV[n, l, o] = d2 f_o(x_n) / dx2 @ V[n, l]``. Cost: about three forward
            passes of ``n_samples * n_directions`` rows per output.
        """
        torch = _import_torch()
        if method not in ("batched", "vmap"):
            raise ValueError(f"method must be 'batched' or 'vmap'; got {method!r}.")
        Xt = self._to_tensor(X)
        n, d = Xt.shape
        if np.ndim(V) != 3 or np.shape(V)[0] != n or np.shape(V)[2] != d:
            raise ValueError(
                f"V must have shape (n_samples, n_directions, n_features) = "
                f"({n}, L, {d}); got {tuple(np.shape(V))}."
            )
        L = np.shape(V)[1]
        Vt = self._to_tensor(np.asarray(V).reshape(n * L, d), name="V").reshape(n, L, d)
        if L == 0 or n == 0:
            n_out = self._forward(Xt[:1]).shape[1] if n else 0
            return np.zeros((n, L, n_out, d))
        if method == "vmap":
            jac = torch.func.jacrev(self._single)

            def hvp(x, v):
                return torch.func.jvp(jac, (x,), (v,))[1]

            fn = torch.func.vmap(torch.func.vmap(hvp, in_dims=(None, 0)), in_dims=(0, 0))
            outs = [fn(Xt[sl], Vt[sl]).detach().to(torch.float64).cpu().numpy()
                    for sl in self._chunks(n, None)]
            return np.concatenate(outs, axis=0)
        rows = self.batch_size or max(1, 65536 // L)
        chain = self._mlp_chain()
        split = self.first_linear_layer()
        outs = []
        for sl in self._chunks(n, rows):
            m = sl.stop - sl.start
            Xr = Xt[sl, None, :].expand(m, L, d).reshape(m * L, d)
            Vr = Vt[sl].reshape(m * L, d)
            if chain is not None:
                pair_rows = torch.arange(m, device=Xt.device).repeat_interleave(L)
                with torch.no_grad():
                    hv = self._chain_hvp(chain, Xt[sl], pair_rows, Vr @ chain[0][1].weight.T)
            elif split is None:
                hv = self._double_backward(self._forward, Xr, Vr)
            else:
                # first layer linear: H_x v = W^T H_z (W v), the double backward runs
                # through the tail only, in the first layer's (usually narrower) space
                W, b, tail = split
                with torch.no_grad():
                    Zr = torch.nn.functional.linear(Xr, W, b)
                hv = self._double_backward(tail, Zr, Vr @ W.T) @ W
            outs.append(hv.reshape(m, L, hv.shape[1], d).to(torch.float64).cpu().numpy())
        return np.concatenate(outs, axis=0)

    def hessian_columns(self, X, rows, cols, *, float64=True):
        """Columns of input Hessians: ``H(X[rows[q]]) e_{cols[q]}`` for each pair q.

        The batched Hessian-vector product of :meth:`hessian_vector_product` with unit
        directions, without building them. For a ``Sequential`` of ``Linear`` layers and
        element-wise activations on its raw output, a written-out R-operator (one
        forward and backward pass on the unique rows, then two matrix products per layer on
        the pairs); else, for a module starting with a linear layer
        (:meth:`first_linear_layer`), the direction is the weight column ``W e_a`` and the
        double backward runs through the tail only; else a double backward.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        rows : array-like of int, shape (k,)
        cols : array-like of int, shape (k,)
        float64 : bool, default=True
            Return float64; ``False`` keeps the module's dtype (saves a conversion).

        Returns
        -------
        HC : ndarray of shape (k, n_outputs, n_features)
        """
        torch = _import_torch()
        Xt = self._to_tensor(X)
        n, d = Xt.shape
        rows = torch.as_tensor(np.asarray(rows, dtype=np.int64), device=Xt.device)
        cols = torch.as_tensor(np.asarray(cols, dtype=np.int64), device=Xt.device)
        if rows.shape != cols.shape or rows.ndim != 1:
            raise ValueError("rows and cols must be 1-D of the same length.")
        k = rows.shape[0]
        if k == 0:
            return np.zeros((0, self._forward(Xt[:1]).shape[1] if n else 0, d))
        chain = self._mlp_chain()
        if chain is not None:
            HC = self._chain_hvp(chain, Xt, rows, chain[0][1].weight.T[cols])
            return (HC.to(torch.float64) if float64 else HC).cpu().numpy()
        split = self.first_linear_layer()
        if split is not None:
            W, b, forward = split
            with torch.no_grad():
                Z = torch.nn.functional.linear(Xt, W, b)
            directions = W.T  # row a: W e_a
        else:
            Z, forward = Xt, self._forward
            directions = torch.eye(d, dtype=Xt.dtype, device=Xt.device)
        outs = []
        for sl in self._chunks(k, self.batch_size or 65536):
            block = self._double_backward(forward, Z[rows[sl]], directions[cols[sl]])
            if split is not None:
                block = block @ W
            outs.append((block.to(torch.float64) if float64 else block).cpu().numpy())
        return outs[0] if len(outs) == 1 else np.concatenate(outs, axis=0)

    def _mlp_chain(self):
        """The layers of a plain ``nn.Sequential`` made only of ``nn.Linear`` layers and
        element-wise activations (and identities, dropout in eval mode), starting with a
        ``Linear``, explained on its raw output; else ``None``."""
        torch = _import_torch()
        nn = torch.nn
        if self.nonlinearity is not None:
            return None
        module = self._module()
        if type(module) is not nn.Sequential or len(module) == 0:
            return None
        layers = []
        for m in module:
            if m._forward_hooks or m._forward_pre_hooks:
                return None
            if type(m) is nn.Linear:
                layers.append(("linear", m))
            elif type(m) in _ELEMENTWISE_ACTIVATIONS(nn):
                layers.append(("act", m))
            elif type(m) in (nn.Identity, nn.Dropout, nn.AlphaDropout):
                continue  # identities in eval mode
            else:
                return None
        if module._forward_hooks or module._forward_pre_hooks or layers[0][0] != "linear":
            return None
        return layers

    def _chain_hvp(self, chain, Xt, rows, R):
        """Hessian-vector products of an MLP chain by Pearlmutter's R-operator, written out.

        ``rows`` (k,) index the rows of ``Xt``; ``R`` (k, h1) is each direction after the
        first linear layer (``W v``; for a unit direction ``e_a``, the column ``W e_a``).

        One forward and one backward pass on the unique rows give each activation's
        input ``a``, ``s1 = act'(a)``, ``s2 = act''(a)`` and the gradient ``g`` at its
        output; then for every (row, column) pair the directional forward
        ``R{a}`` and the directional backward
        ``R{delta_a} = R{delta_y} * s1 + g * s2 * R{a}`` are two matrix products per
        linear layer on the pairs, with no autograd graph over the duplicated rows.
        Exact (the same arithmetic as a double backward), for element-wise activations.

        Returns
        -------
        HV : tensor of shape (k, n_outputs, n_features), the module's dtype
        """
        torch = _import_torch()
        with torch.no_grad():
            # forward on the unique rows, keeping each activation's derivatives
            h = Xt
            acts = {}  # layer index -> (act', act'') at the unique rows
            for idx, (kind, m) in enumerate(chain):
                if kind == "linear":
                    h = torch.nn.functional.linear(h, m.weight, m.bias)
                else:
                    with torch.enable_grad():
                        a = h.detach().requires_grad_(True)
                        y = m(a.clone())  # an in-place activation must not touch the leaf
                        (s1,) = torch.autograd.grad(y.sum(), a, create_graph=True)
                        s2 = (torch.autograd.grad(s1.sum(), a, allow_unused=True)[0]
                              if s1.requires_grad else None)
                    s2 = torch.zeros_like(a) if s2 is None else s2
                    acts[idx] = (s1.detach(), s2.detach())
                    h = y.detach()
            n_all = h.shape[1]
            cols_out = (np.arange(n_all) if self.output_columns is None
                        else self.output_columns)
            # directional forward for every pair, from R{a} after the first linear layer
            R_in = {}  # activation layer index -> R{a}
            for idx, (kind, m) in enumerate(chain[1:], start=1):
                if kind == "linear":
                    R = R @ m.weight.T
                else:
                    R_in[idx] = R
                    R = R * acts[idx][0][rows]
            res = []
            for o in cols_out:
                # backward for output o on the unique rows: gradient at each activation
                delta = torch.zeros((Xt.shape[0], n_all), dtype=Xt.dtype, device=Xt.device)
                delta[:, int(o)] = 1.0
                grad_out = {}
                for idx in range(len(chain) - 1, -1, -1):
                    kind, m = chain[idx]
                    if kind == "linear":
                        delta = delta @ m.weight
                    else:
                        grad_out[idx] = delta
                        delta = delta * acts[idx][0]
                # directional backward on the pairs (R{delta} = 0 at the output)
                Rd = None
                for idx in range(len(chain) - 1, -1, -1):
                    kind, m = chain[idx]
                    if kind == "linear":
                        if Rd is not None:
                            Rd = Rd @ m.weight
                    else:
                        s1, s2 = acts[idx]
                        term = grad_out[idx][rows] * s2[rows] * R_in[idx]
                        Rd = term if Rd is None else Rd * s1[rows] + term
                res.append(Rd if Rd is not None else torch.zeros(
                    (rows.shape[0], Xt.shape[1]), dtype=Xt.dtype, device=Xt.device))
            return torch.stack(res, dim=1)

    def is_smooth(self):
        """Whether every activation module is smooth (no ReLU-like kinks).

        Used by explainers to decide whether a Hessian is informative: ReLU, LeakyReLU,
        ReLU6, Hardtanh, Hardswish, Hardsigmoid, PReLU, RReLU, Threshold, Hardshrink and
        Softshrink are piecewise linear: their Hessian is zero almost everywhere.
        Functional activations called inside ``forward`` (``torch.relu``)
        cannot be seen; this is a best effort.
        """
        torch = _import_torch()
        nn = torch.nn
        kinked = (
            nn.ReLU, nn.LeakyReLU, nn.ReLU6, nn.Hardtanh, nn.Hardswish, nn.Hardsigmoid,
            nn.PReLU, nn.RReLU, nn.Threshold, nn.Hardshrink, nn.Softshrink,
        )
        return not any(isinstance(m, kinked) for m in self.module.modules())
