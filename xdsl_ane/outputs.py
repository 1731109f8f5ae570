"""The one output policy of every command: an output is written beside its
path and moved into place only when complete, an existing output is
replaced only with `force`, and never one of the command's inputs.

A directory is replaced only if xdsl-ane wrote it and it holds nothing
else (`own_entries`): every directory output holds a listing xdsl-ane
writes with it (`manifest.json`, `kernels.json`), from which the entries
that belong there follow; an `.mlpackage` is xdsl-ane's when the manifest
xdsl-ane writes beside it (`NAME.manifest.json`) is there. Any other
directory, or one holding an entry its listing does not name, is refused
even with `force`, so that `--force` never deletes what xdsl-ane did not
write."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from xdsl_ane.errors import XdslAneError, option


def staging_prefix(path: Path) -> str:
    """The name prefix of what a run stages beside `path` before moving it
    into place (`.NAME.PID.`, then mkstemp's random part and `.tmp` or
    `.old`): the process id says whether the run that staged it is alive."""
    return f".{path.name}.{os.getpid()}."


def remove_dead_staging(path: Path) -> list[Path]:
    """Removes what runs that died (killed with SIGKILL, the machine
    stopped) staged beside `path`, recognised by `staging_prefix`'s name
    with the id of a process that no longer runs; a live run's are kept.
    Returns what was removed."""
    removed = []
    try:
        entries = list(path.parent.iterdir())
    except OSError:
        return removed
    start = f".{path.name}."
    for entry in entries:
        rest = entry.name.removeprefix(start)
        if not entry.name.startswith(start) or not rest.endswith((".tmp", ".old")):
            continue
        pid = rest.split(".", 1)[0]
        if not pid.isdigit() or process_alive(int(pid)):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's: not ours to judge
    return True


def check_output(path: str | Path, force: bool = True) -> Path:
    """Fails unless `path` can be written: its directory exists and is
    writable, and it does not exist yet (or `force`). What a dead run
    staged beside it is removed (`remove_dead_staging`)."""
    path = Path(path)
    remove_dead_staging(path)
    if (path.exists() or path.is_symlink()) and not force:
        raise XdslAneError(
            f"{path}: already exists (use {option('force', True)} to replace it)"
        )
    if path.is_dir() and not path.is_symlink():
        check_own_directory(path)
    parent = path.parent
    if not parent.is_dir():
        raise XdslAneError(f"{path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise XdslAneError(f"{path}: directory {parent} is not writable")
    try:  # what access() allows a file system may still refuse (/proc)
        fd, probe = tempfile.mkstemp(
            prefix=staging_prefix(path), suffix=".tmp", dir=parent
        )
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise XdslAneError(
            f"{path}: cannot write in {parent} ({e.strerror or e})"
        ) from None
    return path


PACKAGE_ENTRIES = {"Manifest.json", "Data"}
"""What an `.mlpackage` holds."""
COMPILED_ENTRIES = {"manifest.json", "model.mil", "model.mlmodel", "weights"}
TRAINED_ENTRIES = {
    "config.json",
    "model.safetensors",
    "adapter_config.json",
    "adapter_model.safetensors",
    "optimizer.safetensors",
    "trainer_state.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "generation_config.json",
}
"""What `train` writes in its output (a Hugging Face checkpoint or a PEFT
adapter, and the optimizer's state)."""
"""What a `compile --emit mil-text` or `--emit proto` directory holds."""


def own_entries(directory: Path) -> set[str] | None:
    """The entries xdsl-ane writes in `directory`, read from the listing
    it wrote there (None: `directory` is not an output of xdsl-ane)."""
    if directory.suffix == ".mlpackage":
        beside = directory.with_name(directory.stem + ".manifest.json")
        return PACKAGE_ENTRIES if beside.is_file() else None
    kernels = read_listing(directory / "kernels.json")
    if isinstance(kernels.get("kernels"), list):  # compile-model
        return {"kernels.json"} | {
            str(kernel[key]).split("/")[0]
            for kernel in kernels["kernels"]
            if isinstance(kernel, dict)
            for key in ("mlpackage", "mil_text", "manifest")
            if key in kernel
        }
    plan = read_listing(directory / "plan.json")
    if isinstance(plan.get("kernels"), list):  # compile-train
        return {"plan.json"} | {
            str(kernel[key])
            for kernel in plan["kernels"]
            if isinstance(kernel, dict)
            for key in ("mlpackage", "manifest")
            if key in kernel
        }
    if "identity" in read_listing(directory / "trainer_state.json"):  # train
        return TRAINED_ENTRIES
    manifest = read_listing(directory / "manifest.json")
    llm = manifest.get("llm")
    if isinstance(llm, dict) and isinstance(llm.get("packages"), list):
        text = llm.get("text")  # the copies of the checkpoint's tokenizer files
        return (
            {"manifest.json"}
            | {  # compile-llm --layers-per-package
                entry
                for package in llm["packages"]
                if isinstance(package, dict)
                for entry in (
                    str(package.get("path")),
                    f"{package.get('name')}.manifest.json",
                )
            }
            | ({str(v) for v in text.values()} if isinstance(text, dict) else set())
        )
    asr = manifest.get("asr")
    if isinstance(asr, dict) and isinstance(asr.get("files"), list):  # compile-asr
        packages = []
        for half in (asr.get("encoder"), asr.get("decoder")):
            if isinstance(half, dict):  # (a decoder of one package: its path)
                packages += half.get("parts", [half])
        paths = [str(p.get("path")) for p in packages if isinstance(p, dict)]
        return (
            {"manifest.json"}
            | set(paths)
            | {path.removesuffix(".mlpackage") + ".manifest.json" for path in paths}
            | {str(name) for name in asr["files"]}
        )
    if "functions" in manifest:  # compile --emit mil-text / proto
        return COMPILED_ENTRIES
    names = {p.name for p in directory.iterdir()}
    if not names:
        return set()  # empty: replacing it loses nothing
    if names & {"model.mil", "model.mlmodel"} and names <= COMPILED_ENTRIES:
        return COMPILED_ENTRIES  # a compiled model's files and nothing else
    return None


def read_listing(path: Path) -> dict[str, Any]:
    """The JSON object in `path` ({} if there is none)."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def check_own_directory(path: Path) -> None:
    """Fails unless the directory `path` is an output of xdsl-ane holding
    only what xdsl-ane writes there (so replacing it loses nothing else)."""
    entries = own_entries(path)
    if entries is None:
        raise XdslAneError(
            f"{path}: a directory xdsl-ane did not write; it is not replaced, "
            f"not even with {option('force', True)} (remove it or write elsewhere)"
        )
    stray = sorted(p.name for p in path.iterdir() if p.name not in entries)
    if stray:
        raise XdslAneError(
            f"{path}: holds {stray[0]}, which xdsl-ane did not write there; it "
            f"is not replaced, not even with {option('force', True)} (move it "
            "away or write elsewhere)"
        )


def check_outputs(
    outputs: Sequence[str | Path],
    force: bool,
    inputs: Sequence[str | Path | None] = (),
) -> None:
    """The one output policy of every command: each output can be written
    (`check_output`), exists already only with `force`, and is none of the
    command's `inputs` nor a directory holding one (not even with
    `force`)."""
    sources = [(Path(i), Path(i).resolve()) for i in inputs if i is not None]
    for output in outputs:
        resolved = Path(output).resolve()
        for given, source in sources:
            if resolved == source or resolved in source.parents:
                what = "is" if resolved == source else "holds"
                raise XdslAneError(
                    f"{output}: {what} the input {given} of this command; write "
                    "the output elsewhere"
                )
    for output in outputs:
        check_output(output, force)


@contextmanager
def atomic_output(path: str | Path, force: bool = True) -> Iterator[Path]:
    """Yields a temporary path beside `path`; on success it replaces `path`,
    on failure it is removed and `path` is left untouched."""
    path = check_output(path, force)
    parent = path.parent
    fd, tmp_name = tempfile.mkstemp(
        prefix=staging_prefix(path), suffix=".tmp", dir=parent
    )
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()
    old = tmp.with_name(tmp.name.removesuffix(".tmp") + ".old")
    try:
        try:
            yield tmp
        except OSError as e:
            raise XdslAneError(f"{path}: cannot write: {e.strerror or e}") from None
        if not tmp.exists() and not tmp.is_symlink():
            raise XdslAneError(f"{path}: nothing was written")
        replace(tmp, path, old)
    finally:
        for leftover in (tmp, old):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
            elif leftover.exists() or leftover.is_symlink():
                leftover.unlink()


def replace(new: Path, path: Path, aside: Path) -> None:
    """Moves `new` to `path`. A file replaces a file in one step; anything
    else (a directory output, or a file where a directory was) moves the
    old output to `aside` first and puts it back if the move fails, so an
    interruption leaves either the old or the new output."""
    try:
        if not (path.exists() or path.is_symlink()):
            os.replace(new, path)
            return
        if path.is_file() and new.is_file() and not path.is_symlink():
            os.replace(new, path)
            return
        os.replace(path, aside)
        try:
            os.replace(new, path)
        except BaseException:
            os.replace(aside, path)
            raise
    except OSError as e:
        raise XdslAneError(f"{path}: cannot replace: {e.strerror or e}") from None


def save_npz(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    with atomic_output(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
