"""Progress of long calls on stderr (the explainers' ``verbose``), and worker thread limits.

``verbose=0`` writes nothing. ``verbose=1`` shows a progress bar (rows done, rate, time
left) once a call has run for ``_SHOW_AFTER_S`` seconds: :mod:`tqdm`'s when it is
installed, else a plain line (redrawn in place on a terminal; elsewhere, e.g. in a log
file, written at most every ``_LOG_EVERY_S`` seconds and once at the end). ``verbose=2``
also writes one line per finished batch with its rows and seconds.

A progress bar opened while another is open in the same context (a loop over rounds
whose rounds run batches) is silent, so that one call shows one bar.

:func:`limited_threads` is what a worker of an explainer's own ``n_jobs`` runs a batch
under: OpenMP and BLAS limited to one thread each, so that workers times the model's own
threads do not oversubscribe the cores.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import time

#: seconds a call runs before its progress bar appears (tests patch it to 0)
_SHOW_AFTER_S = 2.0
#: seconds between two progress lines written to a stream that is not a terminal
_LOG_EVERY_S = 10.0

# the progress bar open in this context, if any (nested bars stay silent)
_OPEN = contextvars.ContextVar("sklearn_xai_progress", default=None)


def _tqdm():
    """tqdm's progress bar class, or None when tqdm is not installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _clock(seconds):
    seconds = int(round(seconds))
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"


class Progress:
    """A progress bar of ``total`` units for one call, on ``stream`` (stderr by default).

    Use it as a context manager and call :meth:`update` as units finish.

    Parameters
    ----------
    total : int
        Units (rows, queries, rounds) the call will do; ``None`` when not known.
    verbose : int
        0: silent; 1: the bar, once the call has run ``_SHOW_AFTER_S`` seconds; 2: also
        one line per :meth:`update` that is given ``seconds``.
    desc : str
        What runs (an explainer's class name); starts every line.
    unit : str, default="rows"
        What ``total`` counts.
    stream : file-like or None
        Where to write; ``None``: ``sys.stderr`` at the time the bar opens.
    """

    def __init__(self, total, *, verbose, desc, unit="rows", stream=None):
        self.total = None if total is None else int(total)
        self.verbose = int(verbose or 0)
        self.desc = desc
        self.unit = unit
        self.stream = stream
        self.done = 0
        self._nested = False
        self._bar = None
        self._shown = False
        self._last_write = None

    # -- context --------------------------------------------------------------------------

    def __enter__(self):
        self._nested = _OPEN.get() is not None
        if self.silent:
            return self
        self._token = _OPEN.set(self)
        if self.stream is None:
            self.stream = sys.stderr
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()
        tqdm = _tqdm()
        if tqdm is not None:
            # "8/40 rows [00:01<00:04, 7.9 rows/s]": the rate always in units per second
            layout = None if self.total is None else (
                "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}" + f" {self.unit} "
                "[{elapsed}<{remaining}, {rate_noinv_fmt}]")
            self._bar = tqdm(total=self.total, desc=self.desc, unit=" " + self.unit,
                             file=self.stream, delay=_SHOW_AFTER_S, leave=True,
                             dynamic_ncols=True, bar_format=layout)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.silent:
            return False
        _OPEN.reset(self._token)
        if self._bar is not None:
            self._bar.close()
        elif self._shown:
            self._draw(final=True)
        return False

    @property
    def silent(self):
        """Whether nothing is written: ``verbose=0``, or nested in an open bar."""
        return self.verbose <= 0 or self._nested

    # -- updates --------------------------------------------------------------------------

    def update(self, n=1, *, seconds=None, what=None):
        """``n`` more units done.

        Parameters
        ----------
        n : int
            Units finished.
        seconds : float or None
            How long they took (the per-batch line of ``verbose=2``).
        what : str or None
            What finished, for that line (e.g. ``"rows 0-127"``).
        """
        if self.silent:
            return
        self.done += int(n)
        if self.verbose >= 2 and seconds is not None:
            self.write(f"{self.desc}: {what or f'{int(n)} {self.unit}'} in {seconds:.3f} s")
        if self._bar is not None:
            self._bar.update(int(n))
            return
        now = time.perf_counter()
        if now - self.t0 < _SHOW_AFTER_S:
            return
        if self._tty or self._last_write is None or now - self._last_write >= _LOG_EVERY_S:
            self._draw()

    def write(self, line):
        """Write one line without breaking the bar (``verbose >= 1``)."""
        if self.silent:
            return
        if self._bar is not None:
            self._bar.write(line, file=self.stream)
            return
        if self._tty and self._shown:
            self.stream.write("\r\033[K")
        self.stream.write(line + "\n")
        if self._tty and self._shown:
            self.stream.write(self._line())
        self.stream.flush()

    def _line(self):
        elapsed = time.perf_counter() - self.t0
        rate = self.done / elapsed if elapsed > 0 else 0.0
        if self.total:
            left = (self.total - self.done) / rate if rate > 0 else float("nan")
            pct = f"{100 * self.done / self.total:3.0f}% "
            count = f"{self.done}/{self.total} {self.unit}"
            times = f"{_clock(elapsed)}<{_clock(left) if left == left else '?'}"
        else:
            pct, count, times = "", f"{self.done} {self.unit}", _clock(elapsed)
        return f"{self.desc}: {pct}{count} [{times}, {rate:.3g} {self.unit}/s]"

    def _draw(self, final=False):
        self._shown = True
        self._last_write = time.perf_counter()
        if self._tty:
            self.stream.write("\r\033[K" + self._line() + ("\n" if final else ""))
        else:
            self.stream.write(self._line() + "\n")
        self.stream.flush()


@contextlib.contextmanager
def limited_threads(parent_pid):
    """Run a worker's batch with OpenMP and BLAS limited to one thread each.

    In a worker process (``os.getpid() != parent_pid``) both are limited here. In a
    thread of the calling process only OpenMP is (its limit belongs to the thread that
    sets it); BLAS's limit is process-wide, so the caller sets it once around all its
    workers (:func:`blas_limited`) rather than each thread setting and restoring it.

    Parameters
    ----------
    parent_pid : int
        The process id of the caller that started the workers.
    """
    from threadpoolctl import threadpool_limits

    user_api = None if os.getpid() != parent_pid else "openmp"
    with threadpool_limits(limits=1, user_api=user_api):
        yield


@contextlib.contextmanager
def blas_limited():
    """BLAS limited to one thread in this process while workers run (see
    :func:`limited_threads`)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
