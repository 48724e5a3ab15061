"""Helpers of the command-line tests: run ``main`` and check its one-line errors."""

from sklearn_xai.__main__ import main


def run_cli(argv, capsys):
    """``main(argv)`` (each argument as a string); returns ``(code, stdout, stderr)``."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(code, err, *fragments):
    """Assert exit status 2 and a single ``sklearn-xai: error: ...`` line on stderr that
    holds every fragment; returns that line."""
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("sklearn-xai: error: "), err
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])
    return lines[0]
