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

    if _kernel_cli.wants(args):  # `run` / `check` of an NKI kernel file: Python's to trace
        return _kernel_cli.main(args)
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


if __name__ == "__main__":
    sys.exit(main())
