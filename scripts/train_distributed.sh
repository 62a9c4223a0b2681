#!/usr/bin/env bash
# Data-parallel training with MindSpore's launcher: one train.py process per device, all in one shared run dir.
#
#   scripts/train_distributed.sh [--workers N] [--local-workers M] [--master-addr HOST] [--master-port PORT]
#                                [--node-rank R] [--log-dir DIR] RUN_DIR [train.py overrides...]
#
# Runs `msrun ... train.py distributed=true hydra.run.dir=RUN_DIR train.resume=auto OVERRIDES`: every rank uses the
# same run dir (rank 0 writes into it) and rerunning the same command resumes from its newest checkpoint.
# Defaults: 2 workers on this host, master 127.0.0.1:8118, logs in RUN_DIR/msrun_logs. See docs/distributed.md.
set -euo pipefail

workers=2 local_workers="" master_addr=127.0.0.1 master_port=8118 node_rank="" log_dir=""
usage() { sed -n '4,5p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [[ $# -gt 0 && $1 == --* ]]; do
  [[ $# -ge 2 ]] || { echo "error: $1 needs a value" >&2; usage; }
  case $1 in
    --workers) workers=$2 ;;
    --local-workers) local_workers=$2 ;;
    --master-addr) master_addr=$2 ;;
    --master-port) master_port=$2 ;;
    --node-rank) node_rank=$2 ;;
    --log-dir) log_dir=$2 ;;
    *) echo "error: unknown option $1 (allowed: --workers --local-workers --master-addr --master-port" \
            "--node-rank --log-dir)" >&2; usage ;;
  esac
  shift 2
done
[[ $# -ge 1 ]] || { echo "error: RUN_DIR is missing" >&2; usage; }
run_dir=$1; shift
for value in "$workers" "${local_workers:-$workers}" "$master_port"; do
  [[ $value =~ ^[1-9][0-9]*$ ]] || { echo "error: '$value' is not a positive integer" >&2; exit 2; }
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$run_dir"
run_dir=$(cd "$run_dir" && pwd)  # absolute: every rank (and host) must name the same directory
if [[ $run_dir == *\\* || $run_dir == *'${'* ]]; then
  echo "error: RUN_DIR '$run_dir' holds a backslash or '\${', which Hydra's override syntax would read as an escape or" \
       "an interpolation; choose another folder name" >&2
  exit 2
fi
# Hydra parses override values: quoted, a ',' (a sweep list), '=', spaces or brackets in the path stay part of it.
quoted_run_dir="'${run_dir//\'/\\\'}'"
args=(--worker_num="$workers" --local_worker_num="${local_workers:-$workers}" --master_addr="$master_addr"
      --master_port="$master_port" --join=True --log_dir="${log_dir:-$run_dir/msrun_logs}")
[[ -n $node_rank ]] && args+=(--node_rank="$node_rank")
export GLOG_v="${GLOG_v:-3}"
exec msrun "${args[@]}" "$root/train.py" distributed=true "hydra.run.dir=$quoted_run_dir" train.resume=auto "$@"
