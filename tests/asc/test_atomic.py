"""write_atomic: the target is replaced whole, a failed write leaves the old file and no temporary."""

import numpy as np
import pytest

from asc.atomic import write_atomic


def test_replaces_whole_and_keeps_the_suffix_for_numpy(tmp_path):
    target = tmp_path / "sub" / "x.npy"
    write_atomic(target, lambda tmp: np.save(tmp, np.arange(3)))  # np.save would append .npy to a bare name
    assert np.array_equal(np.load(target), np.arange(3))
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.npy"]


def test_failed_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "t.json"
    target.write_text("old")

    def boom(tmp):
        tmp.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(target, boom)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]
