"""Writing a printed model: the `.mlpackage` (through coremltools) and the
bare protobuf directory of `xdsl-ane compile --emit proto`.

Both are built in a staging directory next to the output and moved into
place with `os.replace` only once complete, so a failure leaves nothing at
the output path (and an existing output as it was). An existing output is
replaced only with `force=True`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from xdsl_ane.backend.weights import (
    WEIGHT_FILE,
    WEIGHTS_DIR,
    BlobStream,
    WeightBlob,
    quiet_coremltools,
)
from xdsl_ane.errors import XdslAneError
from xdsl_ane.outputs import remove_dead_staging, staging_prefix


class ProtoResult(Protocol):
    """What the writers here need of a printed model
    (`milproto.ProtoResult`, which calls them)."""

    spec: Any
    """coremltools' `Model_pb2.Model`."""
    blob: WeightBlob

    @property
    def has_weight_data(self) -> bool: ...

    def write_weights(self, weights_dir: str | Path) -> Path: ...


PACKAGE_SUFFIX = ".mlpackage"
PROTO_FILE = "model.mlmodel"


def save_mlpackage(
    result: ProtoResult, path: str | Path, *, force: bool = False
) -> Path:
    """Writes `result` as the `.mlpackage` at `path`, as
    `coremltools.models.MLModel(spec, weights_dir=...).save(path)` lays it
    out, without its copies: coremltools' `ModelPackage` writes the
    manifest and stores the spec as the root model, its weights item is
    added empty, and the blob is then written straight into that item's
    directory (MLModel would copy the weights into a temporary package and
    copy that package again). coremltools silently accepts a weights
    directory without `weight.bin`, so its presence is checked here."""
    path = package_path(path)
    _require_weight_data(result, path)
    with _staged(path, force) as (staging, staged):
        write_package(result, path, staging, staged, result.write_weights)
    return path


def print_and_save_mlpackage(
    print_proto: Callable[[WeightBlob], ProtoResult],
    path: str | Path,
    *,
    force: bool = False,
) -> ProtoResult:
    """`save_mlpackage` of the model `print_proto` prints into the blob it
    is given, with the blob written while the model is printed (a
    `BlobStream` in the staging directory, moved into the package's
    weights item once the package is made). The printed model is returned;
    nothing is left at `path` if printing or writing fails."""
    return PackageWrite(print_proto, path, force=force).finish()


class PackageWrite:
    """`print_and_save_mlpackage` in two steps, so that the caller goes on
    (compiles the next package) while the weights go to disk: made, it
    prints the model as its blob is written on the stream's thread and
    returns once printed; `finish` waits for the blob, makes the package
    and gives the printed model; `abort` waits for the writer and leaves
    nothing. One of the two must be called."""

    def __init__(
        self,
        print_proto: Callable[[WeightBlob], ProtoResult],
        path: str | Path,
        *,
        force: bool = False,
    ):
        self.path = package_path(path)
        self._stack = contextlib.ExitStack()
        self.staging, self.staged = self._stack.enter_context(_staged(self.path, force))
        self.stream = BlobStream(self.staging / WEIGHT_FILE)
        blob = self.stream.__enter__()  # the writer starts
        try:
            try:
                self.result = print_proto(blob)
            finally:
                self.stream.close()  # the last entry is planned
            _require_weight_data(self.result, self.path)
        except BaseException:
            self.abort()
            raise

    def finish(self) -> ProtoResult:
        try:
            self.stream.join()
            if self.stream.error is not None:
                raise self.stream.error

            def move_weights(weights_dir: Path) -> None:
                os.replace(self.stream.path, weights_dir / WEIGHT_FILE)

            write_package(
                self.result, self.path, self.staging, self.staged, move_weights
            )
        except BaseException as e:
            self.stream.join()
            self._stack.__exit__(type(e), e, e.__traceback__)
            raise
        self._stack.close()  # moves the package into place
        return self.result

    def abort(self) -> None:
        self.stream.close()
        self.stream.join()
        error = XdslAneError(f"{self.path}: not written")
        self._stack.__exit__(type(error), error, None)


def package_path(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix != PACKAGE_SUFFIX:
        raise XdslAneError(
            f"{path}: an ML program package must end in {PACKAGE_SUFFIX}"
        )
    return path


def write_package(
    result: ProtoResult,
    path: Path,
    staging: Path,
    staged: Path,
    write_weights: Callable[[Path], object],
) -> None:
    """The package at `staged`: the spec as its root model and a weights
    item that `write_weights(directory)` fills."""
    spec_file = staging / PROTO_FILE
    spec_file.write_bytes(result.spec.SerializeToString())
    empty = staging / WEIGHTS_DIR
    empty.mkdir()
    with quiet_coremltools():
        from coremltools.libmodelpackage import ModelPackage
        from coremltools.models.utils import (
            _MLPACKAGE_AUTHOR_NAME,
            _MODEL_FILE_NAME,
            _WEIGHTS_DIR_NAME,
        )
    package = ModelPackage(str(staged))
    package.setRootModel(
        str(spec_file),
        _MODEL_FILE_NAME,
        _MLPACKAGE_AUTHOR_NAME,
        "CoreML Model Specification",
    )
    package.addItem(
        str(empty),
        _WEIGHTS_DIR_NAME,
        _MLPACKAGE_AUTHOR_NAME,
        "CoreML Model Weights",
    )
    item = package.findItemByNameAuthor(_WEIGHTS_DIR_NAME, _MLPACKAGE_AUTHOR_NAME)
    weights_dir = Path(item.path())
    del package, item  # writes Manifest.json
    write_weights(weights_dir)
    if not (weights_dir / WEIGHT_FILE).is_file():
        raise XdslAneError(f"{path}: {weights_dir} holds no {WEIGHT_FILE}")


def write_proto_dir(
    result: ProtoResult, directory: str | Path, *, force: bool = False
) -> Path:
    """Writes `directory/model.mlmodel` (`spec.SerializeToString()`) and
    `directory/weights/weight.bin`."""
    directory = Path(directory)
    _require_weight_data(result, directory)
    with _staged(directory, force) as (_, staged):
        staged.mkdir()
        result.write_weights(staged / WEIGHTS_DIR)
        (staged / PROTO_FILE).write_bytes(result.spec.SerializeToString())
        os.chmod(staged, 0o755)
    return directory


def discard_temporary_package(model: object) -> None:
    """Removes the package coremltools makes in the system's temporary
    directory for an MLModel built from a spec (it would otherwise stay,
    weights and all, until the process exits)."""
    path = getattr(model, "package_path", None)
    if getattr(model, "is_temp_package", False) and path:
        shutil.rmtree(path, ignore_errors=True)


def _require_weight_data(result: ProtoResult, path: Path) -> None:
    if not result.has_weight_data:
        missing = next(e.source for e in result.blob.entries if e.data is None)
        raise XdslAneError(
            f"{path}: the model was printed without weights (no data for weight "
            f"'{missing}')"
        )


@contextlib.contextmanager
def _staged(path: Path, force: bool) -> Iterator[tuple[Path, Path]]:
    """Yields a staging directory beside `path` and the path inside it where
    the caller builds the output; on success that replaces `path`, and the
    staging directory (with any replaced output) is removed either way."""
    if path.exists() and not force:
        raise XdslAneError(f"{path}: already exists (not replaced without force)")
    parent = path.parent
    if not parent.is_dir():
        raise XdslAneError(f"{path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise XdslAneError(f"{path}: directory {parent} is not writable")
    remove_dead_staging(path)
    staging = Path(
        tempfile.mkdtemp(prefix=staging_prefix(path), suffix=".tmp", dir=parent)
    )
    try:
        staged = staging / path.name
        yield staging, staged
        if not staged.exists():
            raise XdslAneError(f"{path}: nothing was written")
        if path.exists() or path.is_symlink():
            if not force:
                raise XdslAneError(
                    f"{path}: already exists (not replaced without force)"
                )
            os.replace(path, staging / ".replaced")
        os.replace(staged, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
