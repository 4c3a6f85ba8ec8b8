"""Batch runs of ``geoql compile``: a split or a file of requests to a prediction file, on every
core of this machine (``--workers``) or on a Ray cluster (``--cluster``), resumable, and never
silently wrong.

For ``--out runs/dev.pred`` there are three files:

- ``runs/dev.pred``: the answers, one query a line, the dataset's format (what ``geoql eval``
  reads). It appears only when every request has its answer. A request that got none because
  something other than the request failed (``Compilation.failed``: the backend, the prompt, the
  checks) is never an empty line in it: the run ends with an error that says how many failed,
  and running the same command again tries only those again.
- ``runs/dev.pred.tmp``: the run in progress, a log of JSON lines. Its first line names the run
  (the requests' count and SHA-256, and the settings that decide the answers); each further line
  is one request's answer or failure, in the order the workers finish them. Running the same
  command again resumes from it. The log of other requests or other settings is refused, never
  mixed into this run.
- ``runs/dev.pred.run.json``: written as the run finishes: the same names, and the SHA-256 of the
  prediction file (and of ``--jsonl``). A rerun calls the prediction file complete only when all
  of them still agree; any other file at ``--out`` is refused, never overwritten.

The requests go to the workers in chunks of ``--batch-size`` consecutive lines, the same chunks
whatever the number of workers, so the answers are the ones one process gives, byte for byte.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Protocol, Sequence

from geoql.app.backends import backend_class
from geoql.app.compile import Compiler
from geoql.app.config import CompileConfig
from geoql.core.errors import GeoqlError, UserError
from geoql.core.files import open_atomic, write_atomic
from geoql.retrieval.parallel import usable_cores

# The first line of a run's log, and the record of a finished run.
LOG_FORMAT = "geoql-compile-log/1"
RUN_FORMAT = "geoql-compile-run/1"
# A run whose first answers all fail stops after this many: the backend is broken (a damaged index,
# a server that is down), and every further request would wait for the same failure.
STOP_AFTER = 20
# What one worker process holds: the CPU default's model, index and embedding measured 0.72 GB of
# RSS after 64 dev requests (docs/compile.md); the default number of workers leaves room for it.
WORKER_MEMORY = 1 << 30
# Chunks in flight per worker: one computing, one waiting, so a worker never idles on the coordinator.
IN_FLIGHT = 2
# Backend options whose values are not written to the run's record, nor part of its name.
SECRET_WORDS = ("key", "token", "secret", "password")
# Environment of the worker processes: one thread each (they are one per core already).
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


class BatchError(GeoqlError):
    """A batch run stopped or cannot start; the message says why and how to go on."""


class WorkerLost(BatchError):
    """A worker process (or a Ray actor) died before it answered its chunk."""


def record_path(out: Path) -> Path:
    """Where the record of a finished run of ``out`` is kept."""
    return out.with_name(out.name + ".run.json")


def log_path(out: Path) -> Path:
    """Where the log of an unfinished run of ``out`` is kept."""
    return out.with_name(out.name + ".tmp")


# ----------------------------------------------------------------------------- the run's name

def run_name(requests: Sequence[str], source: str, config: CompileConfig) -> dict:
    """What a run answers and how: the requests (count, SHA-256, where they came from) and the
    settings that decide the answers (every ``CompileConfig`` field; secrets left out).

    >>> a = run_name(["cafes in Bonn"], "mine.nl", CompileConfig())
    >>> a["requests"]["count"], len(a["requests"]["sha256"])
    (1, 64)
    >>> difference(a, run_name(["cafes in Bonn"], "elsewhere.nl", CompileConfig())) is None
    True
    >>> difference(a, run_name(["pubs in Cork", "bars"], "theirs.nl", CompileConfig()))
    'other requests (2 requests from theirs.nl; these are 1 requests from mine.nl)'
    >>> difference(a, run_name(["cafes in Bonn"], "mine.nl", CompileConfig(n=4, backend_options={"api_key": "x"})))
    'other settings (backend_options: {api_key: (not recorded)} there, {} now; n: 4 there, 1 now)'
    """
    digest = hashlib.sha256()
    for nl in requests:
        digest.update(nl.encode("utf-8", "surrogatepass") + b"\n")
    values = asdict(config)
    values["backend_options"] = {key: ("(not recorded)" if any(w in key.lower() for w in SECRET_WORDS) else value)
                                 for key, value in sorted(values["backend_options"].items())}
    values = json.loads(json.dumps(values, sort_keys=True, default=str))  # as the record will read it back
    settings = hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()
    return {"requests": {"count": len(requests), "sha256": digest.hexdigest(), "source": source},
            "settings": {"sha256": settings, "values": values}}


def difference(ours: dict, theirs: object) -> str | None:
    """What makes ``theirs`` (a log's or a record's run name) another run than ``ours``, in words; None if the same."""
    if not isinstance(theirs, dict) or not isinstance(theirs.get("requests"), dict) \
            or not isinstance(theirs.get("settings"), dict):
        return "an unreadable run"
    mine, other = ours["requests"], theirs["requests"]
    if other.get("sha256") != mine["sha256"]:
        return f"other requests ({_requests(other)}; these are {_requests(mine)})"
    mine, other = ours["settings"], theirs["settings"]
    if other.get("sha256") != mine["sha256"]:
        old = other.get("values") if isinstance(other.get("values"), dict) else {}
        new = mine["values"]
        changed = [f"{key}: {old.get(key)!r} there, {new.get(key)!r} now"
                   for key in sorted(set(new) | set(old)) if new.get(key) != old.get(key)]
        return "other settings (" + "; ".join(changed[:3]).replace("'", "") + ("; ..." if len(changed) > 3 else "") + ")"
    return None


def _requests(part: dict) -> str:
    return f"{part.get('count', '?')} requests from {part.get('source', '?')}"


# ----------------------------------------------------------------------------- the log

@dataclass
class LogState:
    """What a run's log holds: per request index, its latest record."""

    header: dict | None = None
    # i -> (query, valid, offset and length of the record holding its --jsonl row or None)
    answers: dict[int, tuple[str, bool, tuple[int, int] | None]] = field(default_factory=dict)
    failures: dict[int, str] = field(default_factory=dict)  # i -> why its compile failed
    damaged: int = 0  # whole lines that are not records (a line cut off by a crash is not counted)
    end: int = 0  # the end of the last whole line
    size: int = 0

    def answered(self, i: int, rows: bool) -> bool:
        entry = self.answers.get(i)
        return entry is not None and (not rows or entry[2] is not None)


def read_log(path: Path, count: int) -> LogState:
    """The records of the log at ``path`` for ``count`` requests (0: its first line alone); lines that
    are not records are counted and skipped (their requests are compiled again), a line cut off
    mid-write is left out."""
    state = LogState()
    if not path.exists():
        return state
    with open(path, "rb") as f:
        offset = 0
        for n, line in enumerate(f):
            start, offset = offset, offset + len(line)
            if not line.endswith(b"\n"):
                break  # cut off while it was written
            state.end = offset
            if not count and n:
                break  # only the header was asked for
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if n == 0:
                if not (isinstance(record, dict) and record.get("format") == LOG_FORMAT):
                    return state  # no header: not a log of ours
                state.header = record
                continue
            i = record.get("i") if isinstance(record, dict) else None
            if type(i) is not int or not 0 <= i < count:
                state.damaged += 1
            elif isinstance(record.get("failed"), str):
                state.failures[i] = record["failed"]
                state.answers.pop(i, None)
            elif isinstance(record.get("query"), str):
                row = (start, len(line)) if isinstance(record.get("row"), dict) else None
                state.answers[i] = (record["query"], bool(record.get("valid")), row)
                state.failures.pop(i, None)
            else:
                state.damaged += 1
    state.size = path.stat().st_size
    return state


class RunLog:
    """The log file of one run, held with an exclusive lock while this process writes it."""

    def __init__(self, path: Path):
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise UserError(f"another geoql compile is writing {path}: let it finish, or pass another --out") from None
        self.size = os.fstat(self.fd).st_size

    def start_over(self, header: dict) -> None:
        """Empty the log and write the run's name as its first line."""
        os.ftruncate(self.fd, 0)
        self.size = 0
        self.append(header)

    def cut(self, end: int) -> None:
        """Drop what follows the last whole line (a record cut off by a crash)."""
        if end < self.size:
            os.ftruncate(self.fd, end)
            self.size = end

    def append(self, record: dict) -> tuple[int, int]:
        """Write one record as one line; its offset and length."""
        data = (json.dumps(record, ensure_ascii=True, default=str, separators=(",", ":")) + "\n").encode("ascii")
        start = self.size
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view):]
        except OSError as exc:
            self.size = os.fstat(self.fd).st_size
            raise disk_error(exc, self.path) from None
        self.size += len(data)
        return start, len(data)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # also releases the lock
            self.fd = -1


def disk_error(exc: OSError, path: Path) -> Exception:
    """A full disk as the one line that says what to do (the caller adds what was kept); any other OSError as it is."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return BatchError(f"no space left on the disk of {path} ({exc.strerror}): free some space and run the same "
                          "command again")
    return exc


# ----------------------------------------------------------------------------- the work of a worker

def answer_chunk(compiler: Compiler, chunk: Sequence[tuple[int, str]], rows: bool) -> list[dict]:
    """The log records of one chunk of ``(i, request)``: ``{"i", "query", "valid"[, "row"]}`` or
    ``{"i", "failed"}``. Never raises: anything unexpected is every request's failure."""
    try:
        comps = compiler.compile_batch([nl for _, nl in chunk], batch_size=max(1, len(chunk)))
    except Exception as exc:  # compile_batch never raises by contract; a bug must still not lose the run
        return [{"i": i, "failed": f"{type(exc).__name__}: {exc}"} for i, _ in chunk]
    records = []
    for (i, _), comp in zip(chunk, comps):
        if comp.failed:
            records.append({"i": i, "failed": "; ".join(comp.errors) or "the compile failed"})
            continue
        record = {"i": i, "query": comp.query.replace("\n", " "), "valid": comp.valid}
        if rows:
            record["row"] = comp.as_dict()
        records.append(record)
    return records


def chunks_of(todo: Iterable[int], size: int, requests: Sequence[str]) -> list[list[tuple[int, str]]]:
    """``todo`` in chunks of the ``size``-line blocks of the whole file (the chunks of a fresh run,
    whatever part of them is left), so a request is compiled beside the same neighbours every time.

    >>> [[i for i, _ in c] for c in chunks_of([0, 1, 2, 5, 6, 9], 4, "abcdefghij")]
    [[0, 1, 2], [5, 6], [9]]
    """
    size = max(1, size)
    out: dict[int, list[tuple[int, str]]] = {}
    for i in todo:
        out.setdefault(i // size, []).append((i, requests[i]))
    return [out[block] for block in sorted(out)]


# ----------------------------------------------------------------------------- engines

class Engine(Protocol):
    """Runs chunks somewhere and hands back their records as chunks finish, in any order."""

    workers: int

    def run(self, chunks: Sequence[list[tuple[int, str]]]) -> Iterator[list[dict]]: ...

    def close(self) -> None: ...


class InProcess:
    """One worker: this process."""

    workers = 1

    def __init__(self, config: CompileConfig, rows: bool):
        self.compiler = Compiler(config=config)
        self.rows = rows

    def run(self, chunks):
        for chunk in chunks:
            yield answer_chunk(self.compiler, chunk, self.rows)

    def close(self) -> None:
        self.compiler.close()


_WORKER: dict = {}


def _start_worker(config: CompileConfig, rows: bool, coordinator: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's: it stops the workers itself
    # The coordinator's pid comes from the coordinator: a worker still importing when it was killed
    # would read its new parent here and watch that one instead.
    threading.Thread(target=_end_with_coordinator, args=(coordinator,), daemon=True,
                     name="geoql-coordinator-watch").start()
    _WORKER["compiler"], _WORKER["rows"] = Compiler(config=config), rows


def _end_with_coordinator(coordinator: int, every_s: float = 0.5) -> None:
    """End this worker once its coordinator is gone.

    A coordinator killed outright (SIGKILL, the OOM killer) cannot stop its pool, and the pool's
    job queue stays open in the sibling workers, so nothing else would end them: they slept on,
    each holding a model and an index (hundreds of MB), until the machine restarted. A process
    whose parent died is handed to another parent, so a changed ``getppid()`` says it.
    """
    while os.getppid() == coordinator:
        time.sleep(every_s)
    os._exit(1)


def _worker_chunk(chunk):
    return answer_chunk(_WORKER["compiler"], chunk, _WORKER["rows"])


class Processes:
    """``workers`` processes on this machine, each with its own model and index.

    They are started with ``spawn`` (a forked child would inherit ONNX Runtime's, faiss's and
    OpenMP's threads half-alive), one thread each. The first chunk goes to one worker alone:
    where the model or the index must first be built, one worker builds it and the others load it.
    """

    def __init__(self, config: CompileConfig, rows: bool, workers: int):
        self.config, self.rows, self.workers = config, rows, workers
        self.pool = None
        self._saved_env: dict = {}

    def run(self, chunks):
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        self._saved_env = {name: os.environ.get(name) for name in ONE_THREAD}
        os.environ.update(ONE_THREAD)  # the spawned workers inherit it before they import numpy
        self.pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_start_worker, initargs=(self.config, self.rows, os.getpid()))
        waiting = iter(chunks)
        running: set = set()
        first = True
        while True:
            limit = 1 if first else self.workers * IN_FLIGHT
            for chunk in waiting:
                running.add(self.pool.submit(_worker_chunk, chunk))
                if len(running) >= limit:
                    break
            if not running:
                return
            done, running = wait(running, return_when=FIRST_COMPLETED)
            first = False
            for future in done:
                try:
                    yield future.result()
                except BrokenProcessPool:
                    raise WorkerLost("a worker process died (killed, or out of memory: each worker holds the model "
                                     f"and the index, about {WORKER_MEMORY >> 20} MB; try fewer --workers)") from None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            # A worker in the middle of a chunk would finish it first; nothing it makes is wanted now.
            for process in list((getattr(self.pool, "_processes", None) or {}).values()):
                if process.is_alive():
                    process.terminate()
            self.pool.shutdown(wait=True)
            self.pool = None
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_env = {}


def machine_workers() -> int:
    """Worker processes for this machine: one per usable core, as many as its free memory holds."""
    cores = usable_cores()
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            free = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return cores
    return max(1, min(cores, free // WORKER_MEMORY))


def default_workers(config: CompileConfig) -> int | None:
    """The backend's choice (``Backend.batch_workers``): 1 for a model that fills an accelerator or a
    server that batches by itself, None (one per core) for the CPU default."""
    try:
        return backend_class(config.backend).batch_workers
    except Exception:  # an unknown or broken backend: its failure is each request's, in one process
        return 1


def local_workers(workers: int | None = None) -> Callable[[CompileConfig, bool, int], Engine]:
    """The engine maker of a run on this machine: ``workers`` processes (default: the backend's
    choice, else :func:`machine_workers`), never more than there are chunks; one runs in this process."""
    def make(config: CompileConfig, rows: bool, chunks: int) -> Engine:
        count = workers or default_workers(config) or machine_workers()
        count = max(1, min(count, chunks))
        return InProcess(config, rows) if count == 1 else Processes(config, rows, count)

    return make


# ----------------------------------------------------------------------------- the run

@dataclass
class Batch:
    """One batch run: what to compile, with what, into which files."""

    requests: list[str]
    indices: list  # each request's index in its dataset (the --jsonl rows' "index")
    source: str  # where the requests come from, for messages ("OverpassNL dev", a path)
    out: Path
    jsonl: Path | None
    config: CompileConfig
    batch_size: int = 16
    label: str = ""  # the progress bar's name


def run_batch(batch: Batch, engine: Callable[[CompileConfig, bool, int], Engine] | None = None) -> int:
    """Compile ``batch`` into ``batch.out`` (see the module's docstring) on the engine that
    ``engine(config, rows, chunks)`` makes (default: :func:`local_workers`); 0 when every request has its
    answer, 1 when some failed (said on stderr, with how to retry). Refusals and stops raise
    :class:`BatchError` or :class:`UserError` with the message for the user."""
    name = run_name(batch.requests, batch.source, batch.config)
    out, tmp, record_file = batch.out, log_path(batch.out), record_path(batch.out)
    record = _read_json(record_file)
    rows = batch.jsonl is not None
    if out.exists():
        problem = _not_ours(out, record, name)
        if problem:
            raise UserError(f"{out} exists and {problem}: move it away or pass another --out")
        if rows and not _vouched(batch.jsonl, record.get("jsonl")):
            raise UserError(f"{out} is complete, but {batch.jsonl} is not its --jsonl: delete {out} to compile "
                            "again with --jsonl, or leave --jsonl out")
        _drop_finished_log(tmp, name)
        print(f"geoql compile: {out} is complete ({len(batch.requests)} lines); delete it to recompute")
        return 0
    # No whole line (none, or a first line cut off by a crash or a full disk): nothing in it to keep.
    fresh = read_log(tmp, 0).end == 0
    if rows and fresh and batch.jsonl.exists() and not _vouched(batch.jsonl, (record or {}).get("jsonl")):
        raise UserError(f"{batch.jsonl} exists and is not the --jsonl of this run: move it away or pass another --jsonl")
    log = RunLog(tmp)
    try:
        state = read_log(tmp, len(batch.requests))
        if not fresh:
            state = _resume_or_refuse(log, state, name, rows)
        if state.header is None:
            log.start_over({"format": LOG_FORMAT, **name})
            state = LogState(header=name, end=log.size, size=log.size)
        log.cut(state.end)
        return _compile_rest(batch, log, state, rows, engine or local_workers())
    finally:
        log.close()


def _resume_or_refuse(log: RunLog, state: LogState, name: dict, rows: bool) -> LogState:
    tmp = log.path
    if state.header is None:
        raise UserError(f"{tmp} is not the log of a geoql compile run (an older geoql's, or damaged): "
                        "delete it to start over, or pass another --out")
    problem = difference(name, state.header)
    if problem:
        if not state.answers:  # nothing in it is worth keeping
            print(f"geoql compile: {tmp} was a run with {problem} and held no answers: starting over")
            return LogState()
        raise UserError(f"{tmp} is an unfinished run with {problem}: run the command that started it to finish it, "
                        "delete it to start over, or pass another --out")
    done = sum(state.answered(i, rows) for i in range(name["requests"]["count"]))
    notes = []
    if state.failures:
        notes.append(f"{len(state.failures)} that failed are tried again")
    if state.damaged:
        notes.append(f"{state.damaged} damaged lines of the log are compiled again")
    missing_rows = sum(1 for i, entry in state.answers.items() if rows and entry[2] is None)
    if missing_rows:
        notes.append(f"{missing_rows} without --jsonl rows are compiled again")
    more = f" ({'; '.join(notes)})" if notes else ""
    print(f"geoql compile: resuming {tmp}: {done} of {name['requests']['count']} answered{more}")
    return state


def _compile_rest(batch: Batch, log: RunLog, state: LogState, rows: bool, make_engine) -> int:
    count = len(batch.requests)
    retried = set(state.failures)
    todo = [i for i in range(count) if not state.answered(i, rows)]
    chunks = chunks_of(todo, batch.batch_size, batch.requests)
    chunks.sort(key=lambda chunk: any(i in retried for i, _ in chunk))  # new work first: see STOP_AFTER
    new_answers = invalid = 0
    if chunks:
        engine = make_engine(batch.config, rows, len(chunks))
        from tqdm import tqdm

        many = f", {engine.workers} workers" if engine.workers > 1 else ""
        bar = tqdm(total=count, initial=count - len(todo), unit="q",
                   desc=f"compile {batch.label} ({batch.config.backend}{many})")
        failed_first = 0
        try:
            for records in engine.run(chunks):
                for record in records:
                    i = record["i"]
                    where = log.append(record)
                    if "failed" in record:
                        state.failures[i] = record["failed"]
                        failed_first += new_answers == 0
                        continue
                    state.failures.pop(i, None)
                    state.answers[i] = (record["query"], record["valid"], where if rows else None)
                    new_answers += 1
                    invalid += not record["valid"]
                bar.update(len(records))
                if new_answers == 0 and failed_first >= STOP_AFTER:
                    first = next(iter(state.failures.values()))
                    raise BatchError(f"stopped: the first {failed_first} requests all failed ({_short(first)}): fix "
                                     "the cause and run the same command again")
        except BatchError as exc:
            kept = sum(state.answered(i, rows) for i in range(count))
            raise type(exc)(f"{exc}; it resumes with {_answers(kept)} kept in {log.path}") from None
        finally:
            bar.close()
            engine.close()
    failed = sorted(i for i in range(count) if not state.answered(i, rows))
    if failed:
        print(_failure_message(batch, log.path, failed, state.failures), file=sys.stderr)
        return 1
    try:
        _finish(batch, log, state, rows)
    except OSError as exc:
        error = disk_error(exc, exc.filename or batch.out)
        if isinstance(error, BatchError):
            raise BatchError(f"{error}; the answers are kept in {log.path}") from None
        raise
    print(f"geoql compile: wrote {batch.out} ({count} lines; {invalid} of {new_answers} new ones invalid)")
    return 0


def _short(message: str, limit: int = 240) -> str:
    """One line of at most ``limit`` characters, cut in the middle: a library's error names the file at its end.

    >>> _short("a" * 200 + " examples.faiss: read error", 60)
    'aaaaaaaaaaaaaaaaaaaaaaaaaaaa … a examples.faiss: read error'
    """
    message = " ".join(message.split())
    if len(message) <= limit:
        return message
    half = (limit - 3) // 2
    return message[:half] + " … " + message[len(message) - half:]


def _answers(n: int) -> str:
    return "1 answer" if n == 1 else f"{n} answers"


def _failure_message(batch: Batch, tmp: Path, failed: list[int], failures: dict[int, str]) -> str:
    why = Counter(_short(failures.get(i, "not compiled")) for i in failed).most_common(2)
    reasons = "; ".join(f"{n}× {message}" for message, n in why)
    lines = ", ".join(str(i + 1) for i in failed[:5]) + (", ..." if len(failed) > 5 else "")
    kept = len(batch.requests) - len(failed)
    keeping = f"; the other {_answers(kept)} {'is' if kept == 1 else 'are'} kept in {tmp}" if kept else ""
    return (f"geoql compile: error: {len(failed)} of {len(batch.requests)} requests failed (lines {lines}): {reasons}. "
            f"Fix the cause and run the same command again: it tries only these again{keeping}, and {batch.out} is "
            "written once every request has its answer.")


def _finish(batch: Batch, log: RunLog, state: LogState, rows: bool) -> None:
    """The prediction file (and --jsonl) from the log, their record, then the log goes."""
    count = len(batch.requests)
    jsonl = None
    if rows:
        with open(log.path, "rb") as source, open_atomic(batch.jsonl) as target:
            digest = hashlib.sha256()
            for i in range(count):
                start, length = state.answers[i][2]
                source.seek(start)
                row = json.loads(source.read(length))["row"]
                line = _jsonl_line({"i": i, "index": batch.indices[i], **row})
                digest.update(line)
                target.write(line)
        jsonl = {"path": str(batch.jsonl), "sha256": digest.hexdigest()}
    text = "".join(state.answers[i][0] + "\n" for i in range(count)).encode("utf-8")
    name = {key: state.header[key] for key in ("requests", "settings")}
    write_atomic(record_path(batch.out), json.dumps(
        {"format": RUN_FORMAT, **name, "lines": count, "sha256": hashlib.sha256(text).hexdigest(), "jsonl": jsonl},
        indent=1, ensure_ascii=False) + "\n")
    write_atomic(batch.out, text)
    log.close()
    log.path.unlink()


def _jsonl_line(row: dict) -> bytes:
    try:
        return (json.dumps(row, ensure_ascii=False, default=str) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (not from a UTF-8 file): escaped
        return (json.dumps(row, ensure_ascii=True, default=str) + "\n").encode("ascii")


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == RUN_FORMAT else None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _not_ours(out: Path, record: dict | None, name: dict) -> str | None:
    """Why the file at ``out`` is not the finished answer of this run (None: it is)."""
    if record is None:
        return f"nothing says which requests it answers (no {record_path(out).name} beside it)"
    problem = difference(name, record)
    if problem:
        return f"holds the answers of a run with {problem}"
    if record.get("sha256") != _sha256(out):
        return "changed after geoql compile wrote it"
    return None


def _vouched(path: Path, entry: object) -> bool:
    """``path`` is the file a finished run's record lists with its SHA-256."""
    return (isinstance(entry, dict) and Path(str(entry.get("path"))).resolve() == path.resolve() and path.exists()
            and entry.get("sha256") == _sha256(path))


def _drop_finished_log(tmp: Path, name: dict) -> None:
    """A finished run's log whose removal was interrupted (never another run's)."""
    if tmp.exists() and difference(name, read_log(tmp, 0).header) is None:
        tmp.unlink()


__all__ = ["Batch", "BatchError", "WorkerLost", "run_batch", "run_name", "difference", "read_log", "answer_chunk",
           "chunks_of", "local_workers", "machine_workers", "default_workers", "record_path", "log_path", "LOG_FORMAT", "RUN_FORMAT"]
