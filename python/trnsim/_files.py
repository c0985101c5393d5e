"""Output files written whole or not at all (as base/atomic_file.h does in C++): a temporary
file beside the target, renamed over it when complete, so an interrupted write never leaves a
truncated file in place of the previous one."""

import os


def write_text_atomically(path, text: str) -> None:
    write_bytes_atomically(path, text.encode("utf-8"))


def write_bytes_atomically(path, data: bytes) -> None:
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory; expected a file name")
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
