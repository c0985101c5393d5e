"""The ``trnsim`` command: the C++ command line, run in-process."""

import os
import sys

from trnsim._paths import export_spec_dir


def main(argv=None) -> int:
    try:
        from trnsim import _core
    except ImportError as e:  # a broken install, not a user mistake: say what to do
        print(f"trnsim: error: the C++ core is not importable ({e}); reinstall with "
              "`bash scripts/install.sh`", file=sys.stderr)
        return 2
    export_spec_dir()
    args = list(sys.argv[1:] if argv is None else argv)
    from trnsim import _kernel_cli

    if args and args[0] == "profile":
        plot, args = _plot_option(args)
        if plot is False:
            return 2
        if plot is not None and not _kernel_cli.wants(args):
            return _profile_with_plot(args, plot)
    else:
        plot = None
    if _kernel_cli.wants(args):  # `run` / `check` of an NKI kernel file: Python's to trace
        return _kernel_cli.main(args, plot=plot)
    from trnsim import validation

    validation.register()  # `trnsim validate` runs the NKI kernels' targets too
    sys.stdout.flush()
    # Bytes as the OS gave them (sys.argv holds undecodable bytes as surrogate escapes).
    raw = [a if isinstance(a, bytes) else os.fsencode(a) for a in args]
    try:
        return _core.cli_main(raw)
    except KeyboardInterrupt:  # Ctrl-C outside the simulation (the C++ side returns 130 itself)
        print("trnsim: interrupted", file=sys.stderr)
        return 130


def _plot_option(args):
    """(FILE, args without `--plot FILE`) for `trnsim profile ... --plot FILE`: the plot is
    Python's (matplotlib), so the option never reaches the C++ command. (False, args) after
    reporting a bad --plot; (None, args) without one."""
    from trnsim.profile_plot import check_target

    plot, rest, i = None, [args[0]], 1
    while i < len(args):
        a = args[i]
        if a == "--":  # what follows is positional
            rest += args[i:]
            break
        if a == "--plot" or a.startswith("--plot="):
            if a == "--plot":
                if i + 1 >= len(args):
                    print("trnsim: error: --plot: expected a file name (.png or .svg)",
                          file=sys.stderr)
                    return False, args
                i += 1
                a = args[i]
            else:
                a = a[len("--plot="):]
            plot = a
        else:
            rest.append(a)
        i += 1
    if plot is not None:
        try:
            check_target(plot)
        except (ValueError, ImportError) as e:
            print(f"trnsim: error: --plot {plot}: {e}", file=sys.stderr)
            return False, args
    return plot, rest


def _profile_with_plot(args, plot) -> int:
    """`trnsim profile ... --plot FILE` of a kernel or program: the C++ command prints as
    without --plot; the figures for the plot come from its --json (a second, identical run
    unless --json was asked for: the timing model is deterministic)."""
    import json

    from trnsim._kernel_cli import _captured
    from trnsim.profile_plot import plot as draw

    if "--json" in args:
        rc, out, err = _captured(args)
        sys.stdout.write(out)
        sys.stderr.write(err)
    else:
        sys.stdout.flush()
        rc = _core_cli(args)
        if rc not in (0, 1):  # bad input or a bug: reported already, nothing to draw
            return rc
        rc2, out, err = _captured(args + ["--json"])
        if rc2 != rc:
            sys.stderr.write(err)
            return max(rc, rc2)
    if rc not in (0, 1) or not out.strip():
        return rc
    try:
        draw(json.loads(out), plot)
    except (OSError, ValueError) as e:
        print(f"trnsim: error: --plot {plot}: {getattr(e, 'strerror', None) or e}",
              file=sys.stderr)
        return 2
    return rc


def _core_cli(args) -> int:
    from trnsim import _core

    return _core.cli_main([os.fsencode(a) for a in args])


if __name__ == "__main__":
    sys.exit(main())
