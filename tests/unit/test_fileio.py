"""secure_bloom.fileio.LocalFile: a regular file read with os.pread alone, its fstat the one of its open."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from secure_bloom.errors import NotRegularFileError
from secure_bloom.fileio import LocalFile, open_local_file


def test_reads_seeks_and_tells_like_a_file(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(100)))
    with open_local_file(path) as f, open(path, "rb") as reference:
        assert isinstance(f, LocalFile) and f.stat.st_size == 100
        for offset, whence, n in [(10, os.SEEK_SET, 5), (3, os.SEEK_CUR, 4), (-8, os.SEEK_END, 20), (0, os.SEEK_SET, -1),
                                  (200, os.SEEK_SET, 4)]:
            assert f.seek(offset, whence) == reference.seek(offset, whence)
            assert f.read(n) == reference.read(n)
            assert f.tell() == reference.tell()
    assert f.closed
    f.close()  # twice is fine
    with pytest.raises(ValueError, match="closed"):
        f.read(1)


def test_the_size_is_that_of_the_open(tmp_path: Path) -> None:
    """A reader reads the version it opened: SEEK_END and read(-1) count from the fstat of the open."""
    path = tmp_path / "f.bin"
    path.write_bytes(b"abcd")
    with open_local_file(path) as f:
        with open(path, "ab") as grow:
            grow.write(b"efgh")
        assert f.seek(0, os.SEEK_END) == 4
        f.seek(0)
        assert f.read() == b"abcd"
        assert f.read(4) == b"efgh"  # an explicit read still reads what is there, as pread does


def test_refuses_what_an_open_refuses(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        open_local_file(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFileError, match="FIFO"):
        open_local_file(fifo)  # never blocks: opened non-blocking, then refused
    with pytest.raises(FileNotFoundError):
        open_local_file(tmp_path / "missing")
    path = tmp_path / "f.bin"
    path.write_bytes(b"x")
    with open_local_file(path) as f:
        with pytest.raises(OSError) as raised:
            f.seek(-1)
        assert raised.value.errno == errno.EINVAL
        with pytest.raises(ValueError, match="whence"):
            f.seek(0, 7)
