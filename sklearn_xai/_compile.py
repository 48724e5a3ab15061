"""Where numba caches the compiled kernels, and a note on stderr while they compile.

The package's numba kernels (TreeSHAP, SHEAR, P2CE) are compiled on their first use and
cached on disk (``cache=True``), so only the first process of an installation pays for
the compilation (seconds); later ones load the machine code.

Cache folder
------------
Numba reads ``NUMBA_CACHE_DIR`` when it is imported. When the user has not set it,
:func:`use_user_cache_dir` (run by ``import sklearn_xai``, before any module of the
package imports numba) sets it to :func:`default_cache_dir`, a folder of the user's
cache directory, so the cache works when the package is installed read-only (a system
site-packages, a container image) and is not written into the installed package. A
``NUMBA_CACHE_DIR`` set by the user always wins. The variable is set for the whole
process (numba has one cache folder per process), so other numba-based libraries
imported afterwards cache there too; numba falls back to its own locations when the
folder cannot be created.

Compilation note
----------------
:func:`compile_notice` wraps an explainer's ``fit`` and ``explain``: when numba has
compiled for more than :data:`_NOTE_AFTER_S` seconds inside it and the explainer's
``verbose`` is at least 1, one line on stderr says so (once per process).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

#: seconds of compilation after which :func:`compile_notice` writes its line
_NOTE_AFTER_S = 2.0

_lock = threading.Lock()
_noted = False  # the line is written once per process
_listener = None


def default_cache_dir() -> str:
    """The numba cache folder used when ``NUMBA_CACHE_DIR`` is not set.

    Returns
    -------
    str
        ``sklearn_xai/numba`` in the user's cache directory: ``%LOCALAPPDATA%`` on
        Windows, ``~/Library/Caches`` on macOS, else ``$XDG_CACHE_HOME`` or
        ``~/.cache``.
    """
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(
            os.path.expanduser("~"), "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(os.path.expanduser("~"), "Library", "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
            os.path.expanduser("~"), ".cache")
    return os.path.join(base, "sklearn_xai", "numba")


def use_user_cache_dir() -> str:
    """Set ``NUMBA_CACHE_DIR`` to :func:`default_cache_dir` unless the user has set it.

    Returns
    -------
    str
        The numba cache folder in effect.
    """
    if not os.environ.get("NUMBA_CACHE_DIR"):
        os.environ["NUMBA_CACHE_DIR"] = default_cache_dir()
        config = sys.modules.get("numba.core.config")
        if config is not None:  # numba already imported: it re-reads the environment
            config.reload_config()
    return os.environ["NUMBA_CACHE_DIR"]


class _CompileClock:
    """Seconds numba has spent compiling while a :func:`compile_notice` was open.

    Numba compiles under one process-wide lock, in whichever thread first calls a kernel
    (a worker thread too), so one clock serves every thread.
    """

    def __init__(self):
        self.open = 0  # compile_notice blocks open
        self.depth = 0  # nested compilations in progress
        self.started = None
        self.seconds = 0.0

    def start(self):
        with _lock:
            if self.open and self.depth == 0:
                self.started = time.perf_counter()
            self.depth += 1

    def end(self):
        with _lock:
            self.depth = max(0, self.depth - 1)
            if self.depth == 0 and self.started is not None:
                self.seconds += time.perf_counter() - self.started
                self.started = None

    def elapsed(self):
        with _lock:
            running = 0.0 if self.started is None else time.perf_counter() - self.started
            return self.seconds + running


_clock = _CompileClock()


def _install_listener():
    """Register (once) a listener of numba's compile events that feeds the clock."""
    global _listener
    if _listener is not None:
        return
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, ev):
            _clock.start()

        def on_end(self, ev):
            _clock.end()

    _listener = _Listener()
    event.register("numba:compile", _listener)


def _note(stream):
    global _noted
    with _lock:
        if _noted:
            return
        _noted = True
    folder = os.environ.get("NUMBA_CACHE_DIR") or "numba's default cache folder"
    print(f"sklearn_xai: compiling numba kernels for their first use (seconds, once per "
          f"installation: later runs load them from {folder})", file=stream, flush=True)


@contextlib.contextmanager
def compile_notice(verbose: int, stream=None):
    """Write one line on stderr once numba has compiled for about 2 s inside.

    Once per process, and only with ``verbose >= 1``; the explainers' ``fit`` and
    ``explain`` run inside it.

    Parameters
    ----------
    verbose : int
        The explainer's ``verbose``; below 1 this does nothing.
    stream : file-like or None
        Where to write (``sys.stderr`` when None).

    Yields
    ------
    None
    """
    if not verbose or verbose < 1 or _noted:
        yield
        return
    stream = sys.stderr if stream is None else stream
    _install_listener()
    with _lock:
        _clock.open += 1
        outer = _clock.open == 1
        if outer:
            _clock.seconds = 0.0
    if not outer:  # the outer block watches
        try:
            yield
        finally:
            with _lock:
                _clock.open -= 1
        return
    done = threading.Event()

    def watch():
        while not done.wait(0.1):
            if _clock.elapsed() > _NOTE_AFTER_S:
                _note(stream)
                return

    watcher = threading.Thread(target=watch, name="sklearn_xai-compile-notice",
                               daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        with _lock:
            _clock.open -= 1
        if _clock.elapsed() > _NOTE_AFTER_S:
            _note(stream)
