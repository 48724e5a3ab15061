"""Every public signature of the package carries type hints (issue #20 item 7).

Public: the functions and classes named in ``__all__`` of each public module (lazy names are
resolved through the module's ``__getattr__``), and each public class's methods defined in the
package (names not starting with ``_``, plus ``__init__`` and ``__call__``; a property's
getter). Every parameter but ``self``/``cls`` (``*args``/``**kwargs`` included, ``Any`` will
do) and the return must be annotated.
"""

import ast
import importlib
import inspect
import sys

import pytest

#: the public modules whose ``__all__`` is walked
PUBLIC_MODULES = [
    "sklearn_xai",
    "sklearn_xai.base",
    "sklearn_xai.shapley",
    "sklearn_xai.knockoffs",
    "sklearn_xai.tree",
    "sklearn_xai.recourse",
    "sklearn_xai.metrics",
    "sklearn_xai.testing",
    "sklearn_xai.datasets",
    "sklearn_xai.neighbors",
    "sklearn_xai.model_selection",
]

_DUNDERS = ("__init__", "__call__")


def _in_package(obj):
    return (getattr(obj, "__module__", None) or "").startswith("sklearn_xai")


def _unwrap(member):
    if isinstance(member, staticmethod | classmethod):
        return member.__func__
    if isinstance(member, property):
        return member.fget
    return member


def _public_functions(module_name):
    """``(qualified name, function)`` of every public function of a module."""
    module = importlib.import_module(module_name)
    seen = set()
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isclass(obj) and _in_package(obj):
            for klass in obj.__mro__:
                if not _in_package(klass):
                    continue
                for attr, member in vars(klass).items():
                    if attr.startswith("_") and attr not in _DUNDERS:
                        continue
                    func = _unwrap(member)
                    if not inspect.isfunction(func) or not _in_package(func):
                        continue
                    key = (f"{obj.__name__}.{attr}", func)
                    if any(k == key[0] for k, _ in seen):
                        continue  # overridden lower in the MRO
                    seen.add(key)
                    yield key
        elif inspect.isfunction(obj) and _in_package(obj):
            key = (name, obj)
            if key not in seen:
                seen.add(key)
                yield key


def _missing(func):
    """Names of the unannotated parameters of ``func`` (``'return'`` for the return)."""
    signature = inspect.signature(func)
    missing = [name for name, param in signature.parameters.items()
               if name not in ("self", "cls") and param.annotation is inspect.Parameter.empty]
    if signature.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def _offenders(module_name):
    offenders = []
    for qualname, func in _public_functions(module_name):
        missing = _missing(func)
        if missing:
            code = inspect.unwrap(func).__code__
            where = f"{func.__module__}:{code.co_firstlineno}"
            offenders.append(f"{qualname} ({where}): {', '.join(missing)}")
    return offenders


def _type_checking_namespace(module_name):
    """The module's globals plus what its ``if TYPE_CHECKING:`` blocks import."""
    module = sys.modules[module_name]
    namespace = dict(vars(module))
    tree = ast.parse(inspect.getsource(module))
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            body = ast.Module(body=node.body, type_ignores=[])
            exec(compile(body, module.__file__, "exec"), namespace)
    return namespace


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_public_annotations_resolve(module_name):
    # the (string) annotations name real types once the TYPE_CHECKING imports are made
    pytest.importorskip("hypothesis")
    pytest.importorskip("matplotlib")
    unresolved = []
    for qualname, func in _public_functions(module_name):
        func = inspect.unwrap(func)
        namespace = _type_checking_namespace(func.__module__)
        for name, annotation in func.__annotations__.items():
            if not isinstance(annotation, str):
                continue
            try:
                eval(annotation, namespace)
            except Exception as exc:  # report every failure
                unresolved.append(f"{qualname}({name}: {annotation}): {exc!r}")
    assert not unresolved, "\n".join(unresolved)


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_public_signatures_are_annotated(module_name):
    offenders = _offenders(module_name)
    assert not offenders, (
        f"{len(offenders)} public signature(s) of {module_name} lack type hints:\n"
        + "\n".join(offenders))


def test_walk_finds_the_public_api():
    # the walk itself: explainers' methods and the lazily resolved names are reached
    names = {name for name, _ in _public_functions("sklearn_xai")}
    assert {"ShearExplainer.__init__", "ShearExplainer.fit", "ShearExplainer.explain",
            "Attribution.__init__"} <= names
    assert "kernel_shapley" in {name for name, _ in _public_functions("sklearn_xai.shapley")}
