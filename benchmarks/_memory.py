"""Process memory readings for the benchmarks (Linux ``/proc``; NaN elsewhere)."""


def status_mib(field):
    """A ``/proc/self/status`` field (``"VmRSS"``, ``"VmHWM"``) in MiB, or NaN."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def reset_peak():
    """Reset the peak resident set (``VmHWM``) to the current one; False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False
