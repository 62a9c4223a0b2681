#!/usr/bin/env bash
# Build the LeakyReluCustom / LeakyReluGradCustom Ascend C op package with the CANN toolkit.
#
# Usage: scripts/build_ascend_ops.sh [--soc SOC] [--out DIR] [--install DIR]
#   --soc      msopgen compute unit, default Ascend910B1 (bf16 needs Atlas A2 or newer)
#   --out      build directory, default build/ascend_ops
#   --install  run the produced custom_opp_*.run into DIR; then export
#              ASCEND_CUSTOM_OPP_PATH=DIR/vendors/customize before starting MindSpore
#
# Needs CANN (ASCEND_HOME_PATH or ASCEND_TOOLKIT_HOME, e.g. after sourcing set_env.sh). Untested in this
# project: no CANN toolkit on the development machine (see docs/tiling.md).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SRC="$ROOT/ops/csrc/ascendc"
SOC="Ascend910B1"
OUT="$ROOT/build/ascend_ops"
INSTALL=""

while [[ $# -gt 0 ]]; do
    case "$1" in
        --soc) SOC="${2:?--soc needs a value}"; shift 2 ;;
        --out) OUT="${2:?--out needs a value}"; shift 2 ;;
        --install) INSTALL="${2:?--install needs a value}"; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "error: unknown argument '$1' (allowed: --soc SOC, --out DIR, --install DIR)" >&2; exit 2 ;;
    esac
done

CANN="${ASCEND_HOME_PATH:-${ASCEND_TOOLKIT_HOME:-}}"
if [[ -z "$CANN" || ! -d "$CANN" ]]; then
    echo "error: the CANN toolkit was not found: set ASCEND_HOME_PATH or ASCEND_TOOLKIT_HOME" \
         "(source <CANN>/set_env.sh). The Ascend C LeakyReLU op cannot be built without CANN;" \
         "the CPU kernels do not need it." >&2
    exit 1
fi
MSOPGEN="$(command -v msopgen || true)"
[[ -z "$MSOPGEN" && -x "$CANN/python/site-packages/bin/msopgen" ]] && MSOPGEN="$CANN/python/site-packages/bin/msopgen"
if [[ -z "$MSOPGEN" ]]; then
    echo "error: msopgen was not found on PATH or in $CANN/python/site-packages/bin (CANN at $CANN)" >&2
    exit 1
fi

# Generate the op project skeleton, then replace its sources with ours and the shared tiling header.
PROJECT="$OUT/LeakyReluCustom"
rm -rf "$PROJECT"
mkdir -p "$OUT"
"$MSOPGEN" gen -i "$SRC/leaky_relu_custom.json" -c "ai_core-$SOC" -lan cpp -out "$PROJECT"
rm -f "$PROJECT"/op_host/*.cpp "$PROJECT"/op_host/*.h "$PROJECT"/op_kernel/*.cpp "$PROJECT"/op_kernel/*.h
cp "$SRC"/op_host/* "$PROJECT/op_host/"
cp "$SRC"/op_kernel/* "$PROJECT/op_kernel/"
for dir in op_host op_kernel; do
    cp "$ROOT/ops/csrc/tiling.h" "$SRC/lrelu_ascend_layout.h" "$PROJECT/$dir/"
done

(cd "$PROJECT" && bash build.sh)
PACKAGE="$(ls "$PROJECT"/build_out/custom_opp_*.run 2>/dev/null | head -n 1 || true)"
if [[ -z "$PACKAGE" ]]; then
    echo "error: build.sh finished but no custom_opp_*.run was produced in $PROJECT/build_out" >&2
    exit 1
fi
echo "built $PACKAGE"
if [[ -n "$INSTALL" ]]; then
    mkdir -p "$INSTALL"
    "$PACKAGE" --install-path="$INSTALL"
    echo "installed; before starting MindSpore: export ASCEND_CUSTOM_OPP_PATH=$INSTALL/vendors/customize"
fi
