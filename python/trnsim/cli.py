"""The ``trnsim`` command: the C++ command line, run in-process."""

import sys

from trnsim import _core
from trnsim._paths import export_spec_dir


def main(argv=None) -> int:
    export_spec_dir()
    args = list(sys.argv[1:] if argv is None else argv)
    sys.stdout.flush()
    return _core.cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
