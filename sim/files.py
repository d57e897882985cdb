"""Writing a result file so that a reader never sees half of it: the content goes to a
temporary file beside the target, which is then renamed into place (``os.replace`` is atomic
within a directory). Used by ``sim collect``, ``sim report`` and ``sim plan --out``."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomic(path: str | Path, write: Callable[[str], None],
                 error: type[Exception] = OSError) -> Path:
    """``write(tmp)`` fills a temporary file beside ``path``, which then replaces ``path``; an
    OSError on the way becomes ``error`` with one line naming ``--out`` (nothing is left)."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise error(f"--out={str(path)!r}: must be a file in a directory that exists and can "
                    f"be written ({exc.strerror or type(exc).__name__})") from None
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the file from other readers
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise error(f"--out={str(path)!r}: cannot be written "
                        f"({exc.strerror or type(exc).__name__})") from None
        raise
    return path
