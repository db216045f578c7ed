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


@pytest.fixture
def private():
    """Private writes on, under a permissive umask (so only the explicit modes can make files private)."""
    import os

    from asc.atomic import private_writes

    old = os.umask(0o022)
    private_writes(True)
    os.umask(0)  # what a library resetting the umask would do: the explicit modes must still hold
    yield
    private_writes(False)
    os.umask(old)


def test_private_writes_make_files_0600_and_new_folders_0700(tmp_path, private):
    import stat

    existing = tmp_path / "runs"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    target = existing / "a" / "b" / "x.npy"
    write_atomic(target, lambda tmp: np.save(tmp, np.arange(3)))  # a writer that opens the file itself
    mode = {p.relative_to(tmp_path).as_posix(): oct(stat.S_IMODE(p.stat().st_mode))
            for p in [existing, *existing.rglob("*")]}
    assert mode == {"runs": "0o755", "runs/a": "0o700", "runs/a/b": "0o700", "runs/a/b/x.npy": "0o600"}


def test_private_writes_set_and_restore_the_umask():
    import os

    from asc.atomic import is_private, private_writes

    old = os.umask(0o022)
    try:
        private_writes(True)
        private_writes(True)  # twice: the umask from before is kept, not 077
        assert is_private() and os.umask(0o077) == 0o077
        private_writes(False)
        assert not is_private() and os.umask(0o022) == 0o022
        private_writes(False)  # never on: nothing changes
        assert os.umask(0o022) == 0o022
    finally:
        private_writes(False)
        os.umask(old)
