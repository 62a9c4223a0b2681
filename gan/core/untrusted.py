"""Bounded reading of files other people wrote: run folders (jsonl, JSON, `.hydra/*.yaml`) and checkpoints' embedded
config. Every error is an `UntrustedFileError` (a ValueError) naming the file.

YAML is parsed by PyYAML's safe loader (no Python objects) with three bounds, checked before OmegaConf or the
dashboard sees the data: at most `MAX_YAML_BYTES`, no aliases (a 351-byte "billion laughs" file of nested
aliases expands to 10^7 nodes and hung every tool that read it; the YAML that Hydra and this project write
never uses aliases) and at most `MAX_YAML_DEPTH` nested collections. Text must be UTF-8.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

MAX_YAML_BYTES = 1 << 20  # a run's config is ~3 KB
MAX_YAML_DEPTH = 32  # the config tree is 3 levels deep


class UntrustedFileError(ValueError):
    """A file from a run folder or checkpoint is not what this project writes (too big, aliased, not UTF-8...)."""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases and collections nested deeper than MAX_YAML_DEPTH."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.YAMLError(f"it uses the YAML alias *{event.anchor} (line {event.start_mark.line + 1}); aliases "
                                 f"are not allowed (nested ones expand exponentially)")
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH:
                raise yaml.YAMLError(f"it nests collections deeper than {MAX_YAML_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def read_text(path: str | Path, max_bytes: int | None = None) -> str:
    """A UTF-8 text file; UntrustedFileError naming it when it is not a regular file (a named pipe would block the
    reader forever; it is opened without waiting and refused), larger than max_bytes or not UTF-8."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UntrustedFileError(f"{path}: not a regular file (a named pipe, device or folder); only regular "
                                     f"files are read")
        if max_bytes is not None and info.st_size > max_bytes:
            raise UntrustedFileError(f"{path}: {info.st_size} bytes, more than the {max_bytes} allowed for it")
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    if max_bytes is not None and len(data) > max_bytes:
        raise UntrustedFileError(f"{path}: more than the {max_bytes} bytes allowed for it")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UntrustedFileError(f"{path}: not UTF-8 text (byte {err.start}: {err.reason})") from None


def load_yaml(text: str, source: str | Path) -> Any:
    """The data of a YAML document from `source` (a file, or a checkpoint's config), bounded as the module says."""
    if len(text.encode("utf-8")) > MAX_YAML_BYTES:
        raise UntrustedFileError(f"{source}: its YAML is larger than {MAX_YAML_BYTES} bytes")
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as err:
        raise UntrustedFileError(f"{source}: not YAML this project reads: {err}") from None
    finally:
        loader.dispose()


def read_yaml(path: str | Path) -> Any:
    """load_yaml of a file (read_text)."""
    return load_yaml(read_text(path, MAX_YAML_BYTES), path)


def read_json(path: str | Path, max_bytes: int | None = None) -> Any:
    """A JSON file; UntrustedFileError naming it when it is empty, cut short, not UTF-8 or over max_bytes."""
    text = read_text(path, max_bytes)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        what = "empty" if not text.strip() else f"not complete JSON ({err})"
        raise UntrustedFileError(f"{path}: {what}") from None
