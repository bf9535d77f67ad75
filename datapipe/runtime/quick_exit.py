"""End a program without tearing its interpreter down.

A build's launcher and its Beam workers hold large heaps (Beam, fastText, spaCy, a tokenizer, numba's
dispatchers); once the program's work is done, freeing them object by object only delays the exit: ~0.4-0.7 s per
process, and the FnApiRunner waits for its workers one after another. Here the atexit handlers still run (logging,
multiprocessing's children, temporary folders), the standard streams are flushed, and the process ends with the
status the program asked for, as ``multiprocessing`` ends its own children. An exception other than SystemExit
goes the usual way (traceback, status 1, normal teardown): failures are rare and should look as Python shows them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from collections.abc import Callable
from typing import NoReturn


def _status(code: object) -> int:
    """The exit status Python gives ``sys.exit(code)`` (a message other than an int is printed, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_then_exit(main: Callable[[], object]) -> NoReturn:
    try:
        main()
        code = 0
    except SystemExit as e:
        code = _status(e.code)
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream: nothing left to lose
                stream.flush()
        os._exit(code)
