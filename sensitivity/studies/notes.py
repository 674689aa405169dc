"""The analysis where users already look: a study's note and artifacts in optuna-dashboard (`report --to-dashboard`).

The note is optuna-dashboard's (`optuna_dashboard.save_note`: Markdown, versioned in the study's system attributes;
a new one replaces the last). The figures are Optuna artifacts of the study (`optuna.artifacts.upload_artifact`) in
a `FileSystemArtifactStore` in the folder ARTIFACTS beside the storage (`artifact_dir`), the folder `sensitivity
dashboard` hands to optuna-dashboard with `--artifact-dir`, so that its Artifacts tab and the note's images show
them. Writing is idempotent: an artifact of this tool (its filename starts with PREFIX) whose name is written again
keeps its id and gets the new bytes (`FileSystemArtifactStore.write`); one no longer written is removed
(`private_apis.remove_study_artifact`: Optuna has no public removal). Nothing is written unless asked.
"""
from __future__ import annotations

import io
import tempfile
from pathlib import Path

from sensitivity.private_apis import remove_study_artifact, study_artifacts, study_id
from sensitivity.studies.catalog import ARTIFACTS
from sensitivity.studies.storage import default_url, folder_beside

PREFIX = "sensitivity-"  # the filenames of this tool's artifacts: what a rerun replaces or removes


def artifact_dir(storage_url=None) -> Path:
    """The artifact store's folder beside the storage (for a database server, under results/)."""
    return folder_beside(storage_url or default_url(), ARTIFACTS)


def artifact_url(study, artifact_id: str) -> str:
    """Where optuna-dashboard serves a study's artifact (its `/artifacts/STUDY_ID/ARTIFACT_ID` route)."""
    return f"/artifacts/{study_id(study)}/{artifact_id}"


def publish(study, files: list, note, folder) -> dict:
    """Write `files` ([(filename, bytes, mimetype)], each filename starting with PREFIX) as the study's artifacts in
    the store at `folder`, then `note(urls)` ({filename: its dashboard URL} -> Markdown) as the study's note;
    returns {filename: artifact id}. A rerun replaces, never duplicates."""
    # lazy: optuna, optuna-dashboard
    import optuna
    from optuna.artifacts import FileSystemArtifactStore
    from optuna_dashboard import save_note

    if any(not name.startswith(PREFIX) for name, _, _ in files):
        raise ValueError(f"an artifact of this tool is named {PREFIX}...")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    store = FileSystemArtifactStore(str(folder))
    ours = {meta["filename"]: meta["artifact_id"] for meta in study_artifacts(study)
            if str(meta.get("filename", "")).startswith(PREFIX)}
    written = {}
    with tempfile.TemporaryDirectory(prefix="sensitivity-artifacts-") as scratch:
        for name, data, mimetype in files:
            if name in ours:  # the same figure again: new bytes under its id, its metadata as it was
                store.write(ours[name], io.BytesIO(data))
                written[name] = ours[name]
                continue
            path = Path(scratch) / name
            path.write_bytes(data)
            written[name] = optuna.artifacts.upload_artifact(artifact_store=store, file_path=str(path),
                                                             study_or_trial=study, mimetype=mimetype)
    for name, artifact in ours.items():
        if name not in written:
            remove_study_artifact(study, store, artifact)
    save_note(study, note({name: artifact_url(study, artifact) for name, artifact in written.items()}))
    return written
