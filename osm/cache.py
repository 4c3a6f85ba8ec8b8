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

import os
import re
import sqlite3
import threading
import time
from pathlib import Path

__all__ = ["SqliteStore"]


class SqliteStore:
    """A small key/value table in SQLite, safe for threads and processes.

    One connection per thread (sqlite3 connections must not be shared), WAL
    journaling so readers never block the writer, and a busy timeout so
    concurrent writers wait instead of failing. A file that is not a database
    is moved aside (never deleted) and a fresh one started.
    """

    def __init__(self, path: str | os.PathLike, table: str):
        if not re.fullmatch(r"[a-z_]+", table):
            raise ValueError(f"table name {table!r} must be lowercase letters and '_'")
        self.path = Path(path)
        self.table = table
        self._local = threading.local()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._setup(self._conn())
        except sqlite3.DatabaseError:
            self._local.__dict__.clear()
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            os.replace(self.path, aside)
            self._setup(self._conn())

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
        row = self._conn().execute(f"SELECT value FROM {self.table} WHERE key=?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def put(self, key: str, value: bytes) -> None:
        self._conn().execute(
            f"INSERT OR REPLACE INTO {self.table} (key, value, created) VALUES (?, ?, ?)",
            (key, sqlite3.Binary(value), time.time()),
        )

    def put_many(self, items: dict[str, bytes], *, replace: bool = False) -> None:
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        now = time.time()
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                f"{verb} INTO {self.table} (key, value, created) VALUES (?, ?, ?)",
                [(k, sqlite3.Binary(v), now) for k, v in items.items()],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def __len__(self) -> int:
        return self._conn().execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]

    def integrity_ok(self) -> bool:
        return self._conn().execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
