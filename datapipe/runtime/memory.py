"""A process's own memory figures, for the engines' logs (which task needed how much)."""

from __future__ import annotations

import resource


def peak_rss_mb() -> int:
    """This process's peak resident set: Linux's ``VmHWM``, which starts anew at ``exec``. ``ru_maxrss`` does not:
    Linux carries it across ``exec``, so a build started by a 4 GB process (a test runner that had loaded models)
    reported 4 GB for a task that held 300 MB. ``ru_maxrss`` where there is no ``/proc``."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
