"""Ray for the datatrove engine: ``build_mixture --engine datatrove --executor ray [--ray-address ADDR]``.

Each phase of a stage runs as datatrove's ``RayPipelineExecutor`` (``pipelines/datatrove/engine.py``): a task is an
actor on any node with a free CPU; a task whose node dies (``WorkerCrashedError``, ``RayActorError``) is submitted
again, up to three times, and one that a task finished is never redone (its completion marker and our shard's commit
marker). Without ``--ray-address`` the build starts a cluster of this machine alone for its own lifetime; with one,
it joins that cluster as a driver and leaves it running. Every node must see the build's output folder at the same
path or URL (a shared file system or an object store) and have this project installed.

Ray's own console lines (start-up notices, the workers' output) are off: the build prints its stage lines only, and
a task's log is in its phase's ``logs/`` folder, as on the other executors.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator

from datapipe.errors import DatapipeError

RAY_EXTRA = "pip install 'datapipe[ray]'"
CONNECT_S = 5.0  # how long the preflight waits for a cluster's address to answer


def check_ray(address: str | None) -> None:
    """Ray installed, and the cluster's address answering, said before any work."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise DatapipeError(f"--executor ray: Ray is not installed ({RAY_EXTRA})") from None
    if address is None or address == "auto":
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise DatapipeError(f"--ray-address {address}: expected HOST:PORT (the head's GCS address) or auto")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_S):
            pass
    except OSError as e:
        raise DatapipeError(
            f"--ray-address {address}: no Ray cluster answers there ({e.strerror or e})"
        ) from None


@contextlib.contextmanager
def joined(address: str | None) -> Iterator[None]:
    """This process as the driver of the cluster at ``address`` (or of a new one on this machine) for the build."""
    import ray

    if ray.is_initialized():  # a caller's own connection (a notebook, a test): used as it is
        yield
        return
    host = (address or "").removeprefix("ray://").rpartition(":")[0]
    ray.init(
        address=address,
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
        # a cluster on loopback is joined on loopback (the driver would register the machine's address)
        _node_ip_address="127.0.0.1" if host in ("127.0.0.1", "localhost") else None,
    )
    try:
        yield
    finally:
        ray.shutdown()
