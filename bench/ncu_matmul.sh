#!/bin/sh
# Profiles one launch of the first config of matmul.tile's @autotune space
# for each dtype given (no tuning: an empty tuning cache and the "first" miss
# policy; after the correctness launch): tensor-pipe activity, warp stall reasons,
# shared-memory bank conflicts. Needs ncu (on the lent GPU machine).
#   bench/ncu_matmul.sh BIN DT M N K [DT M N K ...]
bin=$1; shift
while [ $# -ge 4 ]; do
  echo "== $1 $2x$3x$4"
  TESSERA_CACHE_DIR=$(mktemp -d) MATMUL_REUSE_TUNING=1 TESSERA_AUTOTUNE_MISS=first ncu --launch-skip 1 --launch-count 1 \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed.sum,gpu__time_duration.sum' \
    "$bin" "$1" "$2" "$3" "$4" 2>&1 | grep -E "stalled|gmma|bank|inst_executed|duration" |
    awk '{v=$NF; gsub(",","",v); if (v+0 > 0.05 || $0 ~ /gmma|bank|inst|duration/) print}'
  shift 4
done
