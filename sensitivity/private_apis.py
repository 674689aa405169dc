"""Every private Optuna and Ray name the package uses, behind functions and classes of public names.

Optuna and Ray change their private names in any release, silently. The package reads them here only
(tests/test_private_apis.py walks the package's sources to keep it so), and only with the versions they were
tested with: importing this module raises ImportError, in one line, where an installed Optuna or Ray lies
outside `SUPPORTED`, the ranges of pyproject.toml's sweep extra (the test checks they agree). The check reads
the installed versions' metadata; it imports neither package, so the analysis does not pay Ray's import.

What is used, and why no public route serves:
- Optuna's RDB storage: its cache (`CachedStorage`, the driver's storage builds on it), its SQLAlchemy models
  (the tables the driver reads and writes in bulk), the schema versions it knows; a study's storage and id, a
  trial's id (the storage API is addressed by them, and a Study or FrozenTrial gives them under private names
  only);
- the system attributes of a trial just asked (the Trial keeps its frozen copy privately);
- TPE's sampling methods, the study's trial read they make and TPE's conversion of each trial's parameters to
  its internal form (`TPESamplerOnView`, `StudyView`);
- a study's system attributes (QMCSampler's trace; optuna-dashboard's artifacts), and an artifact's removal
  (`remove_study_artifact`: Optuna keeps the metadata under a private key and has no public removal);
- a local Ray's temporary folder and node address (`ray.init`'s private arguments), and the constant that makes
  Ray keep a loopback node address;
- the names of Ray Train's loggers through which Tune reports a failed write of its files (`TUNE_WRITE_LOGGERS`);
- Tune's rule for giving an idle actor to a waiting trial (`keep_started_actors`: no option sets it).
"""
from __future__ import annotations

import copy
import importlib.metadata
import json
import re
import threading
from pathlib import Path

from packaging.specifiers import SpecifierSet

# The versions the package is tested with (CI); pyproject.toml's sweep extra states the same ranges.
SUPPORTED = {"optuna": ">=5.0,<5.1", "ray": ">=2.60,<2.61"}


class PrivateApiChanged(RuntimeError):
    """A private Optuna or Ray structure is not what this module reads."""


# Versions -------------------------------------------------------------------------------------------------

def check_version(package: str, version: str) -> None:
    """ImportError, in one line, where `version` of `package` (optuna or ray) lies outside SUPPORTED."""
    if not SpecifierSet(SUPPORTED[package]).contains(version):  # a pre-release of a bound is outside it
        raise ImportError(f"{package} {version} is installed; sensitivity supports {package}{SUPPORTED[package]} "
                          f"(it reads private {package} names that change between versions): "
                          f"pip install '{package}{SUPPORTED[package]}'")


def check_installed() -> None:
    """check_version for each installed package of SUPPORTED (from its metadata: nothing is imported)."""
    for package in SUPPORTED:
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
        check_version(package, version)


check_installed()


# Studies and trials ----------------------------------------------------------------------------------------

def study_storage(study):
    """The storage a Study reads and writes through (Optuna's cache around an RDB storage)."""
    return study._storage


def study_id(study) -> int:
    """The id a study's storage knows it by."""
    return study._study_id


def trial_id(trial) -> int:
    """The id the storage knows a Trial or FrozenTrial by."""
    return trial._trial_id


def set_trial_id(trial, value: int) -> None:
    trial._trial_id = value


def study_system_attrs(study) -> dict:
    """A study's system attributes (QMCSampler's counter, optuna-dashboard's note and artifacts): Optuna 5 gives
    them through its storage only, addressed by the study's private id."""
    return study._storage.get_study_system_attrs(study._study_id)


# The study's system attribute prefix under which Optuna's `upload_artifact` keeps an artifact's metadata
# (optuna.artifacts._upload.ARTIFACTS_ATTR_PREFIX), which optuna-dashboard lists.
ARTIFACTS_ATTR_PREFIX = "artifacts:"


def study_artifacts(study) -> list:
    """[{artifact_id, filename, mimetype, encoding}] of a study's artifacts, those removed left out: Optuna 5.0's
    `get_all_artifact_meta` fails on a removed one (its metadata is JSON null, as optuna-dashboard leaves it)."""
    found = []
    for key, value in study_system_attrs(study).items():
        meta = json.loads(value) if key.startswith(ARTIFACTS_ATTR_PREFIX) else None
        if isinstance(meta, dict) and meta.get("artifact_id"):
            found.append(meta)
    return found


def remove_study_artifact(study, artifact_store, artifact_id: str) -> None:
    """Remove a study's artifact: its file from `artifact_store` (public) and its metadata, made JSON null as
    optuna-dashboard's own delete does (Optuna has no public removal, nor a storage that deletes an attribute)."""
    try:
        artifact_store.remove(artifact_id)
    except Exception as exc:  # optuna.artifacts.exceptions.ArtifactNotFound: the file was already gone
        if type(exc).__name__ != "ArtifactNotFound":
            raise
    study._storage.set_study_system_attr(study._study_id, ARTIFACTS_ATTR_PREFIX + artifact_id, "null")


def asked_system_attrs(trial) -> dict:
    """The system attributes of a Trial as `study.ask` made it (a queued trial's `fixed_params`), from the
    frozen copy the Trial keeps, without a read of the storage."""
    return trial._cached_frozen_trial.system_attrs


def rdb_storage(storage_or_study):
    """The RDBStorage under a study or storage (Optuna wraps one in its cache), or None for another storage."""
    # lazy: optuna
    from optuna.storages import RDBStorage  # optuna: imported when a storage is asked

    storage = getattr(storage_or_study, "_storage", storage_or_study)
    backend = getattr(storage, "_backend", storage)
    return backend if isinstance(backend, RDBStorage) else None


def storage_location(study):
    """Where a study's storage lies: ("url", its URL) for an RDB storage (or any layer with a `url`),
    ("journal", its file) for a journal file, None in memory; the cache layer first, then what it wraps."""
    storage = getattr(study, "_storage", None)
    for layer in (storage, getattr(storage, "_backend", None)):
        if getattr(layer, "url", None):
            return "url", str(layer.url)
        if getattr(layer, "_file_path", None):
            return "journal", str(layer._file_path)
    return None


# Optuna's RDB schema and sessions --------------------------------------------------------------------------

def rdb_models():
    """Optuna's SQLAlchemy models (TrialModel, TrialParamModel, ...: the tables of its schema)."""
    # lazy: optuna
    from optuna.storages._rdb import models  # optuna, sqlalchemy: imported when a storage is read

    return models


def schema_versions() -> set:
    """The schema versions (alembic revisions) this Optuna knows: its own and older ones."""
    # lazy: optuna
    import optuna.storages._rdb as rdb  # optuna, sqlalchemy: imported when a storage file is checked

    folder = Path(rdb.__file__).parent / "alembic" / "versions"
    return {m.group(1) for f in folder.glob("*.py")
            for m in [re.search(r"^revision\s*=\s*[\"']([^\"']+)", f.read_text(), re.M)] if m}


# the private methods Optuna's cache calls on its RDB storage, beside BaseStorage's public ones
_CACHE_CALLS = ("record_heartbeat", "_create_new_trial", "_set_trial_param", "_get_best_trial_id", "_get_trials",
                "_get_stale_trial_ids")


def rdb_storage_class(wrap, name: str):
    """A subclass of RDBStorage whose every storage call (BaseStorage's methods, and those Optuna's cache
    calls) is `wrap(method)`."""
    # lazy: optuna
    import optuna  # imported when a storage is opened

    base = optuna.storages.RDBStorage
    names = [n for n in vars(optuna.storages.BaseStorage) if not n.startswith("_") and hasattr(base, n)]
    names += _CACHE_CALLS
    return type(name, (base,), {n: wrap(getattr(base, n)) for n in names if callable(getattr(base, n, None))})


def _cached_storage_class():
    # lazy: optuna
    from optuna.storages._cached_storage import _CachedStorage, _StudyInfo  # optuna: when a driver opens a study

    class CachedStorage(_CachedStorage):
        """Optuna's cache in front of an RDB storage, for a subclass that reads and writes the database itself:
        Optuna's lock made reentrant (`lock`), its cached studies (`studies`: study id -> a record of
        `trials` by number, `unfinished_trial_ids`, `param_distribution`), its trial index (`trial_location`),
        and its two hooks under public names: `read_trials` (Optuna's read of the trials changed since the
        last, before every read from the cache) and `add_to_cache`."""

        def __init__(self, backend) -> None:
            super().__init__(backend)
            self._lock = threading.RLock()  # reentrant: a subclass's write may flush inside Optuna's lock

        def __setstate__(self, state: dict) -> None:
            super().__setstate__(state)
            self._lock = threading.RLock()

        @property
        def backend(self):
            """The RDBStorage the cache wraps."""
            return self._backend

        @property
        def lock(self):
            return self._lock

        @property
        def studies(self) -> dict:
            return self._studies

        def study_cache(self, study_id_: int):
            """The cached record of a study, made empty where there is none yet."""
            return self._studies.setdefault(study_id_, _StudyInfo())

        def trial_location(self, trial_id_: int) -> tuple:
            """(study id, trial number) of a cached trial (KeyError for another)."""
            return self._trial_id_to_study_id_and_number[trial_id_]

        def is_cached(self, trial_id_: int) -> bool:
            return trial_id_ in self._trial_id_to_study_id_and_number

        def read_trials(self, study_id_: int) -> None:
            """Optuna's read of the study's new and unfinished trials into the cache; a subclass may replace it."""
            super()._read_trials_from_remote_storage(study_id_)

        def add_to_cache(self, study_id_: int, trials: list) -> None:
            super()._add_trials_to_cache(study_id_, trials)

        def _read_trials_from_remote_storage(self, study_id_: int) -> None:
            self.read_trials(study_id_)

        def _add_trials_to_cache(self, study_id_: int, trials: list) -> None:
            self.add_to_cache(study_id_, trials)

    return CachedStorage


# TPE --------------------------------------------------------------------------------------------------------

class StudyView:
    """A study as a sampler sees it, with the trials it reads (Optuna's `Study._get_trials`) chosen by `select`;
    everything else is the study's."""

    def __init__(self, study):
        self.study = study

    def __getattr__(self, name):
        return getattr(self.study, name)

    def all_trials(self, use_cache: bool = False) -> list:
        """The study's trials by number, not copied (the sampler's cached read where `use_cache`)."""
        return self.study._get_trials(deepcopy=False, use_cache=use_cache)

    def select(self, states, use_cache: bool) -> list:
        """The trials the sampler sees, of `states` (None: all), by number; a subclass chooses."""
        return [t for t in self.all_trials(use_cache) if states is None or t.state in states]

    def _get_trials(self, deepcopy: bool = True, states=None, use_cache: bool = False) -> list:
        trials = self.select(states, use_cache)
        return copy.deepcopy(trials) if deepcopy else trials


TPE_KEPT = 100_000  # trials whose internal values a TPE sampler keeps


def _tpe_sampler_class():
    # lazy: optuna
    import numpy as np
    from optuna.samplers import TPESampler  # optuna: when a sampler is made

    class TPESamplerOnView(TPESampler):
        """TPESampler whose model (the split into good and bad trials, the Parzen estimators) is fitted to the
        trials of `view(study)`, a StudyView; its arguments are TPESampler's.

        Each trial's parameters in TPE's internal form are kept once they are final (the trial finished, or
        it holds every parameter of the search space itself): Optuna converts every trial the model sees
        again on each ask, most of an ask's time, running trials' from JSON. At most TPE_KEPT trials are
        kept; past that, the store starts again."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._internal: dict = {}  # (study, search space) -> {trial number: internal values, () where one lacks}

        def view(self, study):
            return study

        def _sample_relative(self, study, trial, search_space):
            return super()._sample_relative(self.view(study), trial, search_space)

        def _sample(self, study, trial, search_space):
            return super()._sample(self.view(study), trial, search_space)

        def _get_internal_repr(self, trials, search_space, study):
            kept = self._internal.setdefault((study.study_name, tuple(search_space.items())), {})
            if len(kept) > TPE_KEPT:
                kept.clear()
            rows = []
            for trial in trials:
                row = kept.get(trial.number)
                if row is None:
                    params = self._get_params(trial, study)
                    row = (tuple(d.to_internal_repr(params[n]) for n, d in search_space.items())
                           if search_space.keys() <= params.keys() else ())
                    if trial.state.is_finished() or search_space.keys() <= trial.params.keys():
                        kept[trial.number] = row  # its values for these names are final
                if row:
                    rows.append(row)
            columns = list(zip(*rows)) if rows else [()] * len(search_space)
            return {name: np.asarray(columns[i]) for i, name in enumerate(search_space)}

    return TPESamplerOnView


# Ray --------------------------------------------------------------------------------------------------------

def set_ray_cluster_mode(cluster: bool) -> None:
    """Ray turns a local node address of 127.0.0.1 into the host's reachable address unless it takes the
    machine for a single-node one (its rule for Windows and macOS): False keeps a local Ray on loopback. The
    module's constant, not the environment variable, so that no child process (`ray start`) inherits it."""
    # lazy: ray
    from ray._private import ray_constants  # ray: imported by the caller already

    ray_constants.ENABLE_RAY_CLUSTER = cluster


# The loggers through which Ray Tune reports a failed write of its files (its experiment state, synced to the run's
# folder; Ray Train's syncer and storage, which do the copy): a traceback each, which `ray_cluster.ray_text_aside`
# takes as the sweep's write fault instead
TUNE_WRITE_LOGGERS = ("ray.tune.execution.experiment_state", "ray.tune.tune", "ray.train._internal.syncer",
                      "ray.train._internal.storage")


def keep_started_actors() -> None:
    """Tune gives the actor a trial has just freed to a trial waiting for its own, and ends that one even when it
    holds its CPU and is starting (`TuneController._maybe_reuse_cached_actor`, ray 2.60): a run that began with
    fewer actors than its concurrency (the other CPUs held by other drivers) never grows while its trials are
    shorter than an actor's start, and its CPU of actors started and ended does no work. From this call on, in
    this process, a waiting trial whose actor holds its resources keeps it while the search has a next trial to
    give, and the freed actor goes to that one; an actor still waiting for resources is given up as before."""
    # lazy: ray
    from ray.air.execution._internal.actor_manager import RayActorManager  # ray: imported by the caller already
    from ray.tune.execution.tune_controller import TuneController

    tune_rule = TuneController._maybe_reuse_cached_actor
    if getattr(tune_rule, "keeps_started_actors", False):
        return
    for name in ("_trial_to_actor", "_resetting_trials", "_actor_manager", "_search_alg"):
        if name not in TuneController.__init__.__code__.co_names:
            raise PrivateApiChanged(f"ray's TuneController sets no {name}")
    if not isinstance(getattr(RayActorManager, "pending_actors", None), property):
        raise PrivateApiChanged("ray's RayActorManager has no pending_actors")

    def maybe_reuse_cached_actor(controller, trial) -> bool:
        actor = controller._trial_to_actor.get(trial)
        if (actor is not None and trial not in controller._resetting_trials
                and actor not in controller._actor_manager.pending_actors
                and not controller._search_alg.is_finished()):
            return False  # its actor has its CPU and will start: the freed one goes to the next trial
        return tune_rule(controller, trial)

    maybe_reuse_cached_actor.keeps_started_actors = True
    TuneController._maybe_reuse_cached_actor = maybe_reuse_cached_actor


def local_ray_init_kwargs(temp_dir: str) -> dict:
    """ray.init's arguments for a local Ray keeping its files in `temp_dir`, its node on 127.0.0.1."""
    return dict(_temp_dir=temp_dir, _node_ip_address="127.0.0.1")


_LAZY = {"CachedStorage": _cached_storage_class, "TPESamplerOnView": _tpe_sampler_class}


def __getattr__(name: str):
    """The classes built on Optuna's, made at their first use: importing this module imports no Optuna."""
    if name in _LAZY:
        cls = _LAZY[name]()
        cls.__module__, cls.__qualname__ = __name__, name
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
