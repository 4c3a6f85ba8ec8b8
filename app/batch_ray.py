"""``geoql compile --cluster ADDRESS``: the batch run's workers as actors on a Ray cluster.

Each actor holds one ``Compiler`` (model and index loaded once, on its node) and answers chunks
of requests with ``geoql.app.batch.answer_chunk``, the same work as a local worker. The driver
(the ``geoql compile`` process) keeps the run's log, so what it wrote stays when it or a node
dies, and the same command resumes.

Every node needs GeoQL (``pip install 'geoql[ray]'``) with its index and CPU model (``geoql
index build``, ``geoql cpu train`` or the demo's first start), or the paths the driver's
``GEOQL_*`` variables name, which the actors get. An actor that dies (a killed process, a lost
node) is restarted and its chunk given again, up to :data:`RESTARTS` times.
"""

from __future__ import annotations

import os
import socket

from geoql.app.batch import IN_FLIGHT, ONE_THREAD, BatchError, WorkerLost, answer_chunk
from geoql.app.compile import Compiler
from geoql.app.config import CompileConfig

# How often Ray restarts a dead actor and retries its chunk before the run stops (and can resume).
RESTARTS = 3
# The driver's environment that the actors get: GeoQL's paths and settings, the model hub's offline switch.
PASSED_ON = ("HF_HUB_OFFLINE", "HF_HOME", "TRANSFORMERS_OFFLINE")


class _Worker:
    """One actor: a ``Compiler`` kept between chunks (made into a Ray actor class at run time)."""

    def __init__(self, config: CompileConfig, rows: bool):
        self.compiler = Compiler(config=config)
        self.rows = rows

    def answer(self, chunk):
        return answer_chunk(self.compiler, chunk, self.rows)


def worker_env(environ=None) -> dict:
    """The variables the actors run with: the driver's (``environ``, default ``os.environ``) ``GEOQL_*``
    and :data:`PASSED_ON`, one thread each. A relative directory is made absolute: an actor does not
    run in the driver's working directory.

    >>> env = worker_env({"GEOQL_DATA_DIR": "data", "HF_HUB_OFFLINE": "1", "HOME": "/home/me"})
    >>> env["GEOQL_DATA_DIR"] == os.path.abspath("data"), env["HF_HUB_OFFLINE"], "HOME" in env, env["OMP_NUM_THREADS"]
    (True, '1', False, '1')
    """
    environ = os.environ if environ is None else environ
    env = {key: value for key, value in environ.items() if key.startswith("GEOQL_") or key in PASSED_ON}
    for key, value in env.items():
        if key.endswith("_DIR") and value and not os.path.isabs(value):
            env[key] = os.path.abspath(value)
    return {**env, **ONE_THREAD}


def _check_reachable(address: str) -> None:
    """Fail at once where nothing listens at a ``host:port`` address (Ray itself retries for minutes)."""
    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit():
        return  # "auto", "ray://...": Ray finds or reaches the cluster itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except OSError as exc:
        raise BatchError(f"cannot join the Ray cluster at {address} (nothing answers there: "
                         f"{exc.strerror or exc}): start it with `ray start --head`, or check the address") from None


class RayCluster:
    """The engine of ``--cluster``: ``workers`` actors (default: one per CPU of the cluster)."""

    def __init__(self, address: str, config: CompileConfig, rows: bool, *, workers: int | None, chunks: int):
        try:
            import ray
        except ImportError:
            raise BatchError("--cluster needs Ray: pip install 'geoql[ray]' (on every node of the cluster)") from None
        self.ray = ray
        _check_reachable(address)
        try:
            ray.init(address=address, runtime_env={"env_vars": worker_env()}, logging_level="warning",
                     log_to_driver=False)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BatchError(f"cannot join the Ray cluster at {address} ({first}): start it with `ray start "
                             "--head`, check the address, and RAY_AUTH_TOKEN where the cluster wants a token") from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, min(workers or cpus, chunks))
        actor = ray.remote(num_cpus=1, max_restarts=RESTARTS, max_task_retries=RESTARTS)(_Worker)
        self.actors = [actor.remote(config, rows) for _ in range(self.workers)]

    def run(self, chunks):
        ray = self.ray
        waiting = iter(chunks)
        running: dict = {}  # result ref -> actor
        load = {id(actor): 0 for actor in self.actors}
        while True:
            for actor in self.actors:
                while load[id(actor)] < IN_FLIGHT:
                    chunk = next(waiting, None)
                    if chunk is None:
                        break
                    running[actor.answer.remote(chunk)] = actor
                    load[id(actor)] += 1
            if not running:
                return
            ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                load[id(running.pop(ref))] -= 1
                try:
                    records = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    raise WorkerLost(f"a Ray worker died {RESTARTS + 1} times ({first})") from None
                yield records

    def close(self) -> None:
        for actor in getattr(self, "actors", []):
            try:
                self.ray.kill(actor)
            except Exception:  # already gone with its node
                pass
        self.actors = []
        self.ray.shutdown()


def ray_workers(address: str, workers: int | None = None):
    """The engine maker of a run on the Ray cluster at ``address`` (``geoql.app.batch.run_batch``)."""
    def make(config: CompileConfig, rows: bool, chunks: int) -> RayCluster:
        return RayCluster(address, config, rows, workers=workers, chunks=chunks)

    return make


__all__ = ["RayCluster", "ray_workers", "worker_env", "RESTARTS"]
