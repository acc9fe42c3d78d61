import os
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "conformance"
if not SHARED.is_dir():
    SHARED = ROOT / ".." / "shared" / "conformance"


@pytest.fixture(scope="session")
def reef_bin():
    """The reef CLI of this workspace (built by `cargo build --release`)."""
    b = os.environ.get("REEF_BIN") or str(ROOT / "target" / "release" / "reef")
    assert os.access(b, os.X_OK), f"{b}: build the CLI first (cargo build --release)"
    return b


@pytest.fixture(scope="session")
def system_python():
    """Debian's python3, which has bt2 (python3-bt2)."""
    p = shutil.which("python3", path="/usr/bin")
    assert p, "/usr/bin/python3 is needed (bt2 is Debian's python3-bt2)"
    return p
