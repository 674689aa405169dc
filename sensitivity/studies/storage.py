"""Optuna storages by URL: an SQLite file under results/ by default, a journal file, or PostgreSQL.

`open_storage` fails early, with one line, when a storage cannot be reached or an SQLite file is not a
sound Optuna database (corrupt, another program's, an unknown schema), before Ray starts or anything is
written. Every message names the storage without its password (`redaction`).

The storage URL comes from `--storage`, else the environment's `SENSITIVITY_STORAGE`, else
results/optuna.db. A PostgreSQL URL needs no password: libpq reads `PGPASSWORD` or ~/.pgpass.

Every call on an RDB storage is retried with backoff through a short outage (`storage_health.retried`).
An SQLite file deleted or replaced while a driver has it open (writes would go to the deleted file) is
detected by `check_intact`.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path

from sensitivity import private_apis
from sensitivity.core.paths import atomic_write, cache_root
from sensitivity.studies import torn
from sensitivity.studies.journal_lock import LockError, check_lock, journal_lock
from sensitivity.studies.redaction import describe, reason
from sensitivity.studies.storage_health import retried

DEFAULT_DB = Path("results") / "optuna.db"
ENV_STORAGE = "SENSITIVITY_STORAGE"


class StorageError(Exception):
    """The storage cannot be opened or reached; the message says which and why, without a password."""


class StorageLost(StorageError):
    """The storage failed during a sweep (beyond the retry window, or its file deleted): exit 1."""


class LockFault(StorageLost):
    """A journal's lock that no writer of the journal holds (a link to nothing or to another file): no wait
    would end; one line naming it, exit 1 (`journal_lock`)."""


def check_journal_lock(url: str) -> None:
    """LockFault where `url` is a journal whose lock no writer of it holds (`journal_lock.check_lock`): checked
    with the destinations, before anything is written."""
    path = _file_of(url)
    if path is None or not url.startswith("journal:"):
        return
    try:
        check_lock(path)
    except LockError as exc:
        raise LockFault(f"storage {describe(url)}: {exc}") from None


def default_url() -> str:
    return os.environ.get(ENV_STORAGE) or f"sqlite:///{DEFAULT_DB.resolve()}"


def _write_ahead_log(engine) -> None:
    """SQLite in WAL mode with synchronous=NORMAL: a commit survives the process being killed (only an
    operating-system crash can lose the last ones) and costs a fraction of the default's fsync, which
    matters with a user attribute per result field (docs/performance.md)."""
    # lazy: sqlalchemy
    import sqlalchemy

    @sqlalchemy.event.listens_for(engine, "connect")
    def _pragmas(connection, _record) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    engine.dispose()  # connections opened from now on get the pragmas


def _open_sqlite(url: str, attempts: int = 5):
    """An RDBStorage on an SQLite file. Processes that open a new file at once (a driver and a reader)
    race to create Optuna's tables; the loser sees "table ... already exists" (or a duplicate schema
    version) and simply opens again."""
    # lazy: sqlalchemy
    import sqlalchemy.exc

    for attempt in range(attempts):
        try:
            # one writer (the driver), but readers such as the dashboard may hold the file briefly
            storage = _retrying_rdb()(url, engine_kwargs={"connect_args": {"timeout": 60}})
            _write_ahead_log(storage.engine)
            return storage
        except (sqlalchemy.exc.OperationalError, sqlalchemy.exc.IntegrityError) as exc:
            lost_race = "already exists" in str(exc) or "alembic_version" in str(exc)
            if not lost_race or attempt == attempts - 1:
                raise
            time.sleep(0.2 * (attempt + 1))


ALLOWED = "sqlite:///FILE, postgresql://USER@HOST:PORT/DATABASE, journal:FILE"
CONNECT_TIMEOUT_S = 5


def check_url(url: str) -> None:
    """A storage URL checked before anything is written, here or on the server: its kind (no in-memory
    database, which would vanish with the run), its file's folder (it must exist: none is created, but for
    the default results/), an existing file sound, a server answering within CONNECT_TIMEOUT_S."""
    where = f"storage {describe(url)}"
    if not url.strip():
        raise StorageError(f"storage: empty; allowed {ALLOWED}")
    _check_no_query(url)
    path = _file_of(url)
    if path is not None and url.endswith("/"):  # pathlib drops it: `journal:jdir/` made a file jdir
        raise StorageError(f"{where}: a file's path, which ends in '/' (a folder's); allowed {ALLOWED}, FILE "
                           "without a trailing '/'")
    in_memory = url.startswith("sqlite:") and (path is None or str(path) in ("", ".", ":memory:")
                                              or "mode=memory" in url)
    if in_memory:
        raise StorageError(f"{where}: an in-memory database, which would vanish when the run ends; name a file: "
                           "sqlite:///FILE")
    if path is None:
        if url.split("://")[0].split("+")[0] not in ("postgresql", "postgres") or "://" not in url:
            raise StorageError(f"{where}: unknown kind of storage; allowed {ALLOWED}")
        _check_server(url, where)
        return
    if path.is_symlink() and not path.exists():
        raise StorageError(f"{where}: {path} is a link to nothing ({os.readlink(path)})")
    if path.exists() and not path.is_file():
        raise StorageError(f"{where}: {path} is not a regular file")
    folder = path.parent
    if folder.resolve() == DEFAULT_DB.parent.resolve() and not folder.exists():
        folder = folder.parent  # the default's folder, results/, is made when the run writes
    if folder.exists() and not folder.is_dir():
        raise StorageError(f"{where}: {folder.resolve()} is not a folder")
    if not folder.is_dir():
        raise StorageError(f"{where}: no folder {folder}; create it first (a storage's folder is never created)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StorageError(f"{where}: the folder {folder} is not writable")
    if url.startswith("sqlite:///"):
        check_sqlite_file(url)
    elif path.exists():
        try:
            torn.check_journal(path, where)
        except torn.RecordFileError as exc:
            raise StorageError(str(exc)) from None


def _check_no_query(url: str) -> None:
    """An SQLite URL names a file and nothing else: SQLAlchemy would read `?timeout=abc` as an argument (and
    fail after the file is made), `?uri=true` makes `file::memory:` an in-memory database, and the driver sets
    its own timeout (60 s), so a query string is refused rather than half taken."""
    if url.startswith("sqlite:") and "?" in url:
        raise StorageError(f"storage {describe(url)}: an SQLite URL takes no query string "
                           f"(?{describe(url).partition('?')[2]}): the file alone is used, with a 60 s lock timeout "
                           "set by the driver; allowed sqlite:///FILE")


def _check_server(url: str, where: str) -> None:
    """A database server answers at `url` within CONNECT_TIMEOUT_S (a connection only: nothing written)."""
    # lazy: sqlalchemy
    import sqlalchemy
    import sqlalchemy.exc
    try:
        engine = sqlalchemy.create_engine(url, connect_args={"connect_timeout": CONNECT_TIMEOUT_S})
    except (sqlalchemy.exc.SQLAlchemyError, ImportError, ValueError, TypeError) as exc:
        raise StorageError(f"{where} cannot be opened: not a valid database URL ({reason(exc)}); allowed "
                           f"{ALLOWED}") from None
    try:
        with engine.connect():
            pass
    except (sqlalchemy.exc.SQLAlchemyError, OSError, ValueError) as exc:
        raise StorageError(f"{where} cannot be opened: {reason(exc)}") from None
    finally:
        engine.dispose()


def _make_folder(path: Path) -> None:
    """The folder of a storage file where it is the default's, results/; any other exists (`check_url`)."""
    if path.parent.resolve() == DEFAULT_DB.parent.resolve():
        path.parent.mkdir(exist_ok=True)


def open_storage(url: str | None = None, must_exist: bool = False):
    """An Optuna storage for `url`: sqlite:///..., postgresql://..., or journal:PATH (its kind by its scheme alone).
    With `must_exist` (reading studies), a missing SQLite or journal file is an error, not a new file; without,
    a journal's torn last record is set aside first (`torn.mend_journal`)."""
    # lazy: optuna, sqlalchemy
    import optuna
    import sqlalchemy.exc

    url = url or default_url()
    _check_no_query(url)
    path = _file_of(url)
    if must_exist and path is not None and not path.exists():
        raise StorageError(f"storage {describe(url)}: no such file {path} (no sweep has written there)")
    check_url(url)
    try:
        if path is not None and not url.startswith("sqlite:///"):
            _make_folder(path)
            if not must_exist:  # a writer's open: a reader skips a torn record, as Optuna does
                torn.mend_journal(path, f"storage {describe(url)}")
            return optuna.storages.JournalStorage(_journal_backend()(str(path)))
        if path is not None:
            _make_folder(path)
            storage = _open_sqlite(url)
            _IDENTITY[str(path)] = _identity(path)
            return storage
        return _retrying_rdb()(url, engine_kwargs={"pool_pre_ping": True})
    except torn.RecordFileError as exc:
        raise StorageError(str(exc)) from None
    except (KeyError, TypeError) as exc:  # a journal's record without the fields Optuna replays
        raise StorageError(f"storage {describe(url)} cannot be opened: not an Optuna journal ({reason(exc)})") \
            from None
    except AssertionError:  # Optuna's replay of a record whose op_code it does not know ("Should not reach.")
        raise StorageError(f"storage {describe(url)} cannot be opened: not an Optuna journal (a record of an "
                           "operation Optuna does not know)") from None
    except RecursionError:  # a record nested beyond what json can read
        raise StorageError(f"storage {describe(url)} cannot be opened: not an Optuna journal (a record nested "
                           "too deep to read)") from None
    except (sqlalchemy.exc.SQLAlchemyError, OSError, ImportError, ValueError, RuntimeError, sqlite3.Error) as exc:
        raise StorageError(f"storage {describe(url)} cannot be opened: {reason(exc)}") from None


def check_sqlite_file(url: str) -> None:
    """An existing SQLite file must be a sound Optuna database: readable (not corrupt), with Optuna's
    tables (not another program's database, to which Optuna would add its tables) and a schema version
    this Optuna knows. Read-only: nothing is written to a file refused here. A file a reader found sound
    (`remember_sound`) is not checked again while it is unchanged (`_stamp`): the check reads every page, 1 s
    at 100,000 trials."""
    path = _file_of(url)
    if not path.exists() or path.stat().st_size == 0:
        return
    stamp = _stamp(path)
    if stamp is not None and _found_sound(path) == stamp:
        return
    sidecars = [Path(f"{path}-wal"), Path(f"{path}-shm")]  # a WAL file's reader makes them if they are not there
    existed = [p.exists() for p in sidecars]
    try:
        _check_sqlite(url, path)
    except StorageError:  # refused: the file is left as it was found
        for sidecar, was_there in zip(sidecars, existed):
            if not was_there:
                sidecar.unlink(missing_ok=True)
        raise
    if stamp is not None:
        _CHECKED[str(path)] = stamp


_CHECKED: dict = {}  # path -> its stamp when this process found it sound, for `remember_sound`


def remember_sound(url: str) -> None:
    """Remember that the SQLite file of `url`, found sound by this process, is sound while unchanged: a reader
    calls it once its study has opened (a refused command writes nothing)."""
    path = _file_of(url)
    stamp = _CHECKED.pop(str(path), None) if path is not None else None
    if stamp is None:
        return
    record = _sound_record(path)
    try:
        with atomic_write(record) as file:
            file.write(json.dumps(stamp).encode())
    except OSError:
        pass


def _stamp(path: Path):
    """What changes when an SQLite file is written: its identity, size and modification time, and its WAL file's
    size and time; with the Optuna whose schema versions it was checked against. Taken before the check, so a
    write during it changes the stamp. None where the file cannot be read (the check says why). From `stat`
    alone: a file this process opens and closes outside SQLite drops every lock SQLite holds on it here (POSIX
    advisory locks), and another process's write then corrupts it."""
    try:
        info = path.stat()
        wal = Path(f"{path}-wal")
        wal_info = wal.stat() if wal.exists() else None
    except OSError:
        return None
    return [str(path.resolve()), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns,
            wal_info and [wal_info.st_size, wal_info.st_mtime_ns], _optuna_version(), SOUND_FORMAT]


SOUND_FORMAT = 1  # raise when `_check_sqlite` checks more: no file is then taken as checked by an older one


def _sound_record(path: Path) -> Path:
    return cache_root() / "sound-sqlite" / f"{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]}.json"


def _found_sound(path: Path):
    """The stamp the file had when last found sound, or None."""
    try:
        return json.loads(_sound_record(path).read_text())
    except (OSError, ValueError):
        return None


def _check_sqlite(url: str, path: Path) -> None:
    where = f"storage {describe(url)}"
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60)) as db:
            check = db.execute("PRAGMA quick_check(1)").fetchone()
            if check != ("ok",):
                raise StorageError(f"{where}: the file is corrupt ({check[0] if check else 'no answer'}); "
                                   "restore it, or rebuild the study from its trial log")
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            version = (db.execute("SELECT version_num FROM alembic_version").fetchone() or ("none",))[0] \
                if "alembic_version" in tables else None
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"{where}: the file is corrupt or not an SQLite database ({reason(exc)}); restore it, "
                           "or rebuild the study from its trial log") from None
    foreign = tables - _optuna_tables()  # a file another process is creating holds some of Optuna's only
    if foreign:
        shown = ", ".join(sorted(foreign)[:5]) + (", ..." if len(foreign) > 5 else "")
        raise StorageError(f"{where}: not an Optuna database (it holds tables {shown}); name another file")
    if version is not None and version != "none" and version not in private_apis.schema_versions():
        raise StorageError(f"{where}: unknown Optuna schema version {version!r} (this Optuna {_optuna_version()} "
                           "knows its own and older ones)")


def _optuna_tables() -> set:
    return set(private_apis.rdb_models().BaseModel.metadata.tables) | {"alembic_version", "sqlite_sequence"}


def _optuna_version() -> str:
    # lazy: optuna
    import optuna
    return optuna.__version__


def _file_of(url: str):
    """The file an SQLite or journal URL names, by its scheme alone (`sqlite:///x.log` is an SQLite file,
    `postgresql://h/db.journal` a server); None for a database server."""
    if url.startswith("journal:"):
        return Path(url.removeprefix("journal:"))
    if url.startswith("sqlite:///"):
        return Path(url.removeprefix("sqlite:///"))
    return None


def folder_beside(url: str, name: str) -> Path:
    """The folder NAME beside the storage's file (its SQLite or journal file's folder), absolute: where a run
    keeps what belongs to its study (Ray Tune's files, robustness's surrogates); for a database server, NAME
    under results/ of the current folder."""
    path = _file_of(url)
    return ((path.parent if path is not None else DEFAULT_DB.parent) / name).absolute()


# Health during a sweep --------------------------------------------------------------------------------

_IDENTITY: dict = {}  # SQLite file -> (device, inode) when this process opened it


def _identity(path: Path):
    stat = path.stat()
    return stat.st_dev, stat.st_ino


def check_intact(url: str | None) -> None:
    """StorageLost when the SQLite file this process opened is gone or replaced: SQLite keeps writing to
    the deleted file, so without this check a sweep would report trials that no longer exist anywhere."""
    url = url or default_url()
    path = _file_of(url)
    if path is None or str(path) not in _IDENTITY:
        return
    try:
        same = _identity(path) == _IDENTITY[str(path)]
    except OSError:
        same = False
    if not same:
        raise StorageLost(f"storage {describe(url)}: the file was deleted or replaced during the sweep")


def is_storage_error(exc: BaseException) -> bool:
    """An exception of the storage itself (as opposed to a bug): SQLAlchemy's, Optuna's storage error,
    SQLite's, or ours."""
    # lazy: optuna, sqlalchemy
    import optuna
    import sqlalchemy.exc
    return isinstance(exc, (sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError, sqlite3.Error,
                            StorageError))


_JOURNAL = []


def _journal_backend():
    """Optuna's journal file backend whose failed append (a full disk: ENOSPC) is a StorageError, so that the
    sweep stops with its one line (and the torn record is set aside by the next run) rather than a traceback,
    and whose lock names every wait (`journal_lock`: a lock no writer holds is a LockFault, a stale one is
    broken with one line)."""
    # lazy: optuna
    import optuna

    if not _JOURNAL:
        class JournalFile(optuna.storages.journal.JournalFileBackend):
            def __init__(self, file_path: str) -> None:
                super().__init__(file_path, lock_obj=journal_lock(file_path))
                self.path = file_path

            def append_logs(self, logs):
                try:
                    super().append_logs(logs)
                except LockError as exc:
                    raise LockFault(f"journal {self.path}: {exc}") from None
                except OSError as exc:
                    raise StorageError(f"journal {self.path}: a write failed ({exc.strerror})") from None
        _JOURNAL.append(JournalFile)
    return _JOURNAL[0]


_RETRYING = []


def _retrying_rdb():
    """RDBStorage whose every storage call retries through `storage_health.RETRY_WINDOW_S`."""
    if not _RETRYING:
        _RETRYING.append(private_apis.rdb_storage_class(retried, "RetryingRDBStorage"))
    return _RETRYING[0]
