"""The on-disk cache of the OSM clients: a small SQLite key/value table.

The Overpass client keeps server answers in it, the geocoder keeps Nominatim's
answers and the execution metrics keep query outcomes. The files live in the
user cache directory (``geoql.core.paths.user_dir("cache")``) unless a caller
names another.

>>> import tempfile
>>> store = SqliteStore(Path(tempfile.mkdtemp()) / "demo.sqlite", "answers")
>>> store.put("node(1);out;", b"{}")
>>> store.get("node(1);out;"), store.get("way(1);out;"), len(store)
(b'{}', None, 1)
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import threading
import time
from pathlib import Path

__all__ = ["SqliteStore"]

log = logging.getLogger(__name__)


class SqliteStore:
    """A small key/value table in SQLite, safe for threads and processes.

    One connection per thread (sqlite3 connections must not be shared), WAL
    journaling so readers never block the writer, and a busy timeout so
    concurrent writers wait instead of failing. A file that is not a database
    is moved aside (never deleted) and a fresh one started.

    A cache is a help, never a reason to fail: where the file cannot be opened or
    written (a read-only folder, a full disk, a lock held too long) the store says why
    once (a warning; :attr:`problem`) and works on without it: ``get`` finds nothing,
    ``put`` keeps nothing.
    """

    def __init__(self, path: str | os.PathLike, table: str):
        if not re.fullmatch(r"[a-z_]+", table):
            raise ValueError(f"table name {table!r} must be lowercase letters and '_'")
        self.path = Path(path)
        self.table = table
        self.problem = ""  # why the cache is not used ("" while it is)
        self._local = threading.local()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._setup(self._conn())
            except sqlite3.OperationalError:
                raise  # cannot open or write it: not a damaged file
            except sqlite3.DatabaseError:
                self._local.__dict__.clear()
                aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
                os.replace(self.path, aside)
                self._setup(self._conn())
        except (sqlite3.OperationalError, OSError) as exc:
            self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        if not self.problem:
            reason = getattr(exc, "strerror", None) or str(exc)
            self.problem = (f"the cache {self.path} cannot be used ({reason}), so answers are not kept; "
                            "point --cache-dir or $GEOQL_CACHE_DIR at a writable folder with free space")
            log.warning("geoql: warning: %s", self.problem)
        conn = getattr(self._local, "conn", None)
        self._local.__dict__.clear()
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=60000")
            # With WAL, NORMAL never corrupts the file; a power cut may drop the last answers.
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def _setup(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {self.table} "
            "(key TEXT PRIMARY KEY, value BLOB NOT NULL, created REAL NOT NULL)"
        )

    def get(self, key: str) -> bytes | None:
        if self.problem:
            return None
        try:
            row = self._conn().execute(f"SELECT value FROM {self.table} WHERE key=?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            self._give_up(exc)
            return None
        return None if row is None else bytes(row[0])

    def put(self, key: str, value: bytes) -> None:
        if self.problem:
            return
        try:
            self._conn().execute(
                f"INSERT OR REPLACE INTO {self.table} (key, value, created) VALUES (?, ?, ?)",
                (key, sqlite3.Binary(value), time.time()),
            )
        except sqlite3.OperationalError as exc:  # a full disk, a read-only file
            self._give_up(exc)

    def put_many(self, items: dict[str, bytes], *, replace: bool = False) -> None:
        if self.problem:
            return
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        now = time.time()
        try:
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    f"{verb} INTO {self.table} (key, value, created) VALUES (?, ?, ?)",
                    [(k, sqlite3.Binary(v), now) for k, v in items.items()],
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            self._give_up(exc)

    def __len__(self) -> int:
        if self.problem:
            return 0
        return self._conn().execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]

    def integrity_ok(self) -> bool:
        return self._conn().execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
