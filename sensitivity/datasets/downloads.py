"""Fetching the official files of the file sets, each verified against a pinned size and SHA-256.

The pins are the ones TensorFlow Datasets records for these URLs (tensorflow_datasets/url_checksums/
mnist.txt, fashion_mnist.txt, cifar10.txt, cifar100.txt, svhn_cropped.txt). MNIST's primary URL is Google's
CVDF mirror, which those pins were taken from; LeCun's original is tried next and must match the same pin.
A download whose bytes do not match is never written. Archives (CIFAR) are not kept: only the named
members are read from them and written, so nothing outside the data directory can be created.
Every write is atomic. Tests replace `_fetch`; nothing here runs without an explicit request.
"""
from __future__ import annotations

import hashlib
import io
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from sensitivity.core.paths import atomic_write

from .base import DatasetError
from .cache import resolve_data_dir
from .registry import get_info

TIMEOUT_S = 60


@dataclass(frozen=True)
class Pin:
    urls: tuple[str, ...]
    size: int
    sha256: str
    save_as: str = ""                 # a plain file: where it goes, relative to the data directory
    extract: tuple[str, ...] = ()     # an archive: members written to <data_dir>/<member>


def _idx(folder: str, base: str, size: int, sha256: str, mirrors: tuple[str, ...]) -> Pin:
    name = f"{base}.gz"
    return Pin(tuple(m + name for m in mirrors), size, sha256, save_as=f"{folder}/{name}")


_MNIST = ("https://storage.googleapis.com/cvdf-datasets/mnist/", "https://yann.lecun.com/exdb/mnist/")
_FASHION = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",)
_KRIZ = "https://www.cs.toronto.edu/~kriz/"
_SVHN = "http://ufldl.stanford.edu/housenumbers/"

PINS: dict[str, tuple[Pin, ...]] = {
    "mnist": (
        _idx("mnist", "train-images-idx3-ubyte", 9912422,
             "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", _MNIST),
        _idx("mnist", "train-labels-idx1-ubyte", 28881,
             "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", _MNIST),
        _idx("mnist", "t10k-images-idx3-ubyte", 1648877,
             "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", _MNIST),
        _idx("mnist", "t10k-labels-idx1-ubyte", 4542,
             "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", _MNIST),
    ),
    "fashion_mnist": (
        _idx("fashion_mnist", "train-images-idx3-ubyte", 26421880,
             "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84", _FASHION),
        _idx("fashion_mnist", "train-labels-idx1-ubyte", 29515,
             "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845", _FASHION),
        _idx("fashion_mnist", "t10k-images-idx3-ubyte", 4422102,
             "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073", _FASHION),
        _idx("fashion_mnist", "t10k-labels-idx1-ubyte", 5148,
             "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5", _FASHION),
    ),
    "cifar10": (Pin((_KRIZ + "cifar-10-binary.tar.gz",), 170052171,
                    "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd",
                    extract=tuple(f"cifar-10-batches-bin/{n}" for n in
                                  [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"])),),
    "cifar100": (Pin((_KRIZ + "cifar-100-binary.tar.gz",), 168513733,
                     "58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec",
                     extract=("cifar-100-binary/train.bin", "cifar-100-binary/test.bin")),),
    "svhn": (
        Pin((_SVHN + "train_32x32.mat",), 182040794,
            "435e94d69a87fde4fd4d7f3dd208dfc32cb6ae8af2240d066de1df7508d083b8", save_as="svhn/train_32x32.mat"),
        Pin((_SVHN + "test_32x32.mat",), 64275384,
            "cdce80dfb2a2c4c6160906d0bd7c68ec5a99d7ca4831afa54f09182025b6a75b", save_as="svhn/test_32x32.mat"),
    ),
}


def _fetch(url: str) -> bytes:
    """The only function here that touches the network."""
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        return response.read()


def _verified(pin: Pin) -> bytes:
    """The first URL's bytes that arrive; DatasetError when none arrive or the bytes miss the pin."""
    failures = []
    for url in pin.urls:
        try:
            data = _fetch(url)
        except (urllib.error.URLError, OSError) as e:
            failures.append(f"{url}: {e}")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != pin.size or digest != pin.sha256:
            raise DatasetError(f"{url}: got {len(data)} bytes with SHA-256 {digest}, but the pin is {pin.size} "
                               f"bytes with SHA-256 {pin.sha256}; nothing was written")
        return data
    raise DatasetError("download failed: " + "; ".join(failures))


def _extract(url: str, archive: bytes, members: tuple[str, ...], data_dir: Path) -> list[Path]:
    written = []
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
        for member in members:
            try:
                info = tar.getmember(member)
            except KeyError:
                raise DatasetError(f"{url}: the archive lacks {member}") from None
            if not info.isfile():
                raise DatasetError(f"{url}: {member} in the archive is not a regular file")
            with atomic_write(data_dir / member) as out:
                out.write(tar.extractfile(info).read())
            written.append(data_dir / member)
    return written


def download(name: str, data_dir: str | Path | None = None) -> str:
    """Fetch, verify and write `name`'s official files into the data directory; return a one-line report.

    Offline sets ship in packages: nothing is fetched. Files already there are replaced.
    """
    info = get_info(name)
    if info.offline:
        return f"{name} ships in the {info.package} package; nothing to download"
    folder = resolve_data_dir(data_dir)
    written = []
    for pin in PINS[name]:
        data = _verified(pin)
        if pin.extract:
            written += _extract(pin.urls[0], data, pin.extract, folder)
        else:
            with atomic_write(folder / pin.save_as) as out:
                out.write(data)
            written.append(folder / pin.save_as)
    return f"{name}: {len(written)} files verified and written under {folder}"
