#!/usr/bin/env bash
# Builds, tests and measures the CUDA worker on a GPU host (no network needed).
#
#   packaging/device/run.sh [ITEM...]
#
# Items (default: build tests bench-1gpu bench-2gpu), in the order given:
#   build                  configure against the pip PyTorch's LibTorch (CUDA) and build parallax-worker
#                          and the GPU tests into $BUILD_DIR (kept between calls)
#   tests                  ctest -L gpu (NCCL on two GPUs, the worker on GPUs against one GPU, CUDA helpers);
#                          TESTS_REGEX=... runs only the GPU tests whose names match
#                          and the pipeline message-order check
#   bench-1gpu             Parallax gpt-124m on one GPU; the PyTorch reference eager and compiled
#   bench-2gpu             bench-2gpu-parallax then bench-2gpu-reference
#   bench-2gpu-parallax    Parallax gpt-124m dp2, gpt-1.3b ZeRO-3 dp2, pp2 1F1B, tp2
#   bench-2gpu-reference   PyTorch gpt-124m DDP and DDP compiled, gpt-1.3b FSDP2 and DDP
#   bench-4gpu             report: items for the four-GPU specs (gpt-1.3b dp2 x tp2, dp2 x pp2, tp2 x pp2
#                          1F1B and interleaved); skipped on smaller hosts
#   parallax:NAME          one spec, bench/gpu/specs/NAME.toml
#   report:NAME            one spec run through parallax-cli into a store, then `parallax-cli report
#                          --from-step 10` (throughput, per-GPU utilization, bubbles) -> results/report-NAME.txt
#   reference:MODEL:MODE:GPUS[:FLAG,...]   one reference run (bench/gpu/reference.py), e.g.
#                          reference:1.3b:fsdp2:2, reference:124m:compile:1;
#                          MODEL is 124m or 1.3b, MODE eager, compile, ddp, ddp-compile or fsdp2;
#                          each FLAG is passed as --FLAG: reference:124m:compile:1:optimizer=foreach
#   profile:NAME           one spec with the worker's --profile-steps 20:24 (Chrome trace in $PROF)
#   profile-reference:MODEL:MODE   a one-GPU reference run (eager or compile) under torch.profiler
#   kernels                bench/gpu/kernels.py over the profiles so far -> results/kernels.md
#   vl-lora-compare        Qwen2.5-VL-7B LoRA on one GPU: bench/gpu/make_vl_data.py's model folder, image and
#                          conversations (once, into build/vl-bench, in memory where there is room; Qwen's
#                          tokenizer.json from VL_TOKENIZER, default build/dev/npm-oracle/qwen/tokenizer.json),
#                          transformers + PEFT on them (bench/gpu/hf_qwen2_5_vl.py), Parallax's spec
#                          qwen2_5_vl-7b-lora-1gpu, then both in one table -> results/vl-lora-compare.md
#   vl-data                only those inputs (e.g. in the background during the build: `run.sh vl-data &`)
#   qi-lora-compare        Qwen-Image (20B, random initialization) LoRA at 1024 x 1024 on one GPU:
#                          bench/gpu/make_qi_data.py's latent shards (once, into build/qi-bench), diffusers +
#                          PEFT on them (bench/gpu/hf_qwen_image.py; diffusers' source unpacked once from
#                          .deps-diffusers.tar.xz into .deps-diffusers and put on PYTHONPATH), Parallax's spec
#                          qwen_image-20b-lora-1gpu, then both in one table -> results/qi-lora-compare.md
#   qi-lora-compare-noac   the same without activation checkpointing on either side (an H200's memory)
#                          -> results/qi-lora-compare-noac.md
#   qi-lora-compare-recompute   Parallax with train.recompute_blocks (the spec
#                          qwen_image-20b-lora-recompute-1gpu) against diffusers + PEFT checkpointing every
#                          block, then against diffusers checkpointing the same first blocks
#                          -> results/qi-lora-compare-recompute.md, results/qi-lora-compare-recompute-same.md
#   qi-data                only those latent shards
#   summary                bench/gpu/summarize.py over the results so far -> $OUT/benchmarks.md
#
# Needs: the header-only dependencies and GoogleTest in <repo>/.deps (packaging/device/stage-deps.sh
# makes it on a Debian machine; carry it with the tree), python3 with a CUDA PyTorch, CMake, Ninja,
# g++, OpenMPI and nvcc. Environment: OUT (results; default <repo>/device-out), BUILD_DIR (default
# <repo>/build/device), PYTHON, JOBS, ITEM_TIMEOUT (seconds per item, default 480), BUDGET (seconds
# for the whole call, default 570: items that no longer fit are skipped with a message),
# BENCH_THREADS (CPU threads per rank, default 4).
#
# Every launch keeps NVLink multicast off (NCCL_NVLS_ENABLE=0). 2-GPU items are skipped, with a
# message, on a host with one GPU.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo" || exit 2
OUT=${OUT:-$repo/device-out}
BUILD=${BUILD_DIR:-$repo/build/device}
PYTHON=$(command -v "${PYTHON:-python3}" || true)
JOBS=${JOBS:-$(nproc)}
ITEM_TIMEOUT=${ITEM_TIMEOUT:-480}
BUDGET=${BUDGET:-570}
BENCH_THREADS=${BENCH_THREADS:-4}
mkdir -p "$OUT/results" "$OUT/logs"

export NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi

started=$SECONDS
failures=0

log() { echo "[run.sh +$((SECONDS - started))s] $*" | tee -a "$OUT/run.log"; }
fail() { log "FAILED: $*"; failures=$((failures + 1)); }

[ -n "$PYTHON" ] || { log "no python3 on PATH (set PYTHON)"; exit 2; }

gpus=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null) || gpus=""
[[ "$gpus" =~ ^[0-9]+$ ]] || gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[[ "$gpus" =~ ^[0-9]+$ ]] || gpus=0
log "host $(hostname): $gpus GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs)"
log "torch $("$PYTHON" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null)"

# Seconds an item may run: its own limit, cut to what the call has left. Empty when too little is left.
item_budget() {
  local left=$((BUDGET - (SECONDS - started) - 5))
  local t=$ITEM_TIMEOUT
  [ "$left" -lt "$t" ] && t=$left
  [ "$t" -ge 30 ] && echo "$t"
}

# Appends one JSON line describing a finished run to results/manifest.jsonl (summarize.py reads it).
manifest() { # kind name gpus rc seconds log command...
  local kind=$1 name=$2 n=$3 rc=$4 secs=$5 logfile=$6
  shift 6
  "$PYTHON" - "$kind" "$name" "$n" "$rc" "$secs" "$logfile" "$@" >> "$OUT/results/manifest.jsonl" <<'EOF'
import json, sys
kind, name, gpus, rc, secs, log = sys.argv[1:7]
print(json.dumps({"kind": kind, "name": name, "gpus": int(gpus), "rc": int(rc), "seconds": int(secs),
                  "log": log, "command": " ".join(sys.argv[7:])}))
EOF
}

need_gpus() { # n what
  if [ "$gpus" -lt "$1" ]; then
    log "skip $2: needs $1 GPU(s), this host has $gpus"
    return 1
  fi
}

do_build() {
  if [ ! -f .deps/toml++/toml.h ] || [ ! -f .deps/googletest/CMakeLists.txt ]; then
    fail "build: .deps is missing or incomplete; run packaging/device/stage-deps.sh on a Debian machine with the packages and carry .deps with the tree"
    return
  fi
  local budget
  budget=$(item_budget) || { log "skip build: out of time budget ($BUDGET s)"; return; }
  local prefix
  prefix=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)') || { fail "build: PyTorch not importable"; return; }
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  log "configure ($BUILD) against $prefix"
  local t0=$SECONDS
  if ! timeout -k 15 "$budget" cmake -S "$repo" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPARALLAX_CONSOLE=OFF -DPARALLAX_BENCH=OFF -DPARALLAX_THIRD_PARTY="$repo/.deps" \
      -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
      "${launcher[@]}" > "$OUT/logs/configure.log" 2>&1; then
    tail -40 "$OUT/logs/configure.log"
    fail "build: configure (logs/configure.log)"
    return
  fi
  if ! grep -q "CUDA+NCCL ON" "$OUT/logs/configure.log"; then
    grep -iE "nccl|cuda|warning" "$OUT/logs/configure.log" | tail -20
    fail "build: LibTorch's CUDA or NCCL was not found; the worker would be CPU-only (logs/configure.log)"
    return
  fi
  grep -E "NCCL [0-9]|Parallax worker|SQLite: staged" "$OUT/logs/configure.log" | tee -a "$OUT/run.log"
  budget=$(item_budget) || { log "skip build step: out of time budget"; return; }
  log "build -j$JOBS (limit ${budget}s)"
  if ! timeout -k 15 "$budget" cmake --build "$BUILD" -j "$JOBS" --target parallax-worker parallax_gpu_tests \
      parallax_nccl_tests parallax_pipeline_order_tests parallax-cli > "$OUT/logs/build.log" 2>&1; then
    grep -E "error|Error" "$OUT/logs/build.log" | head -40
    tail -5 "$OUT/logs/build.log"
    fail "build (logs/build.log); run 'build' again to continue where it stopped"
    return
  fi
  log "build done in $((SECONDS - t0)) s"
}

do_tests() {
  [ -x "$BUILD/app/parallax-worker" ] || { fail "tests: no worker in $BUILD; run the build item first"; return; }
  local budget
  budget=$(item_budget) || { log "skip tests: out of time budget"; return; }
  log "pipeline message order (unit)"
  "$BUILD/tests/trainer/gpu/parallax_pipeline_order_tests" > "$OUT/logs/tests-pipeline-order.log" 2>&1 ||
    fail "pipeline message order (logs/tests-pipeline-order.log)"
  log "ctest -L gpu (limit ${budget}s)"
  if ! timeout -k 15 "$budget" ctest --test-dir "$BUILD" -L gpu ${TESTS_REGEX:+-R "$TESTS_REGEX"} \
      --output-on-failure --timeout "$budget" --output-junit "$OUT/logs/tests-gpu.xml" > "$OUT/logs/tests-gpu.log" 2>&1; then
    fail "gpu tests (logs/tests-gpu.log)"
  fi
  grep -E "tests passed|tests failed|\((Failed|Skipped|Timeout|Not Run)\)" "$OUT/logs/tests-gpu.log" | tail -40 |
    tee -a "$OUT/run.log"
}

# Where a run's checkpoints go: memory when there is room (the worker checkpoints at its end).
scratch_root() {
  if [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR==2 {print $4}')" -gt $((40 * 1024 * 1024)) ]; then
    echo /dev/shm
  else
    echo "${TMPDIR:-/tmp}"
  fi
}

# Processes a spec runs: dp * tp * pp of its [parallel] table.
spec_ranks() {
  awk -F= '/^(dp|tp|pp) *=/ {gsub(/ /, "", $2); n = (n ? n : 1) * $2} END {print n}' "$1"
}

run_parallax() { # spec name
  local name=$1 spec="bench/gpu/specs/$1.toml"
  [ -f "$spec" ] || { fail "no spec $spec"; return; }
  [ -x "$BUILD/app/parallax-worker" ] || { fail "parallax:$name: no worker in $BUILD; run the build item first"; return; }
  local np
  np=$(spec_ranks "$spec")
  need_gpus "$np" "parallax:$name" || return
  local budget
  budget=$(item_budget) || { log "skip parallax:$name: out of time budget"; return; }
  # An item given twice in one call keeps both logs (the summary has a row for each).
  local rundir base="parallax-$name" again=2
  while [ -e "$OUT/results/$base.log" ]; do base="parallax-$name-run$again"; again=$((again + 1)); done
  local logfile="$OUT/results/$base.log"
  rundir=$(mktemp -d "$(scratch_root)/parallax-bench.XXXXXX")
  local cmd=(mpirun -np "$np" --bind-to none -x NCCL_NVLS_ENABLE=0 -x OMP_NUM_THREADS="$BENCH_THREADS"
             "$BUILD/app/parallax-worker" --spec "$spec" --run-dir "$rundir" --threads "$BENCH_THREADS")
  log "parallax:$name on $np GPU(s) (limit ${budget}s)"
  local t0=$SECONDS rc=0
  timeout -k 15 "$budget" "${cmd[@]}" > "$logfile" 2>&1 || rc=$?
  rm -rf "$rundir"
  manifest parallax "$name" "$np" "$rc" $((SECONDS - t0)) "results/$base.log" "${cmd[@]/$rundir/RUN_DIR}"
  if [ "$rc" -ne 0 ]; then
    tail -15 "$logfile"
    fail "parallax:$name exited $rc after $((SECONDS - t0)) s (results/$base.log)"
  else
    log "parallax:$name done in $((SECONDS - t0)) s"
    # Each rank's breakdown of its steady steps (forward and backward, the wait for reductions, ...).
    grep -o 'rank [0-9]*, steps [0-9]* to [0-9]*, medians of each part[^"]*' "$logfile" |
      while IFS= read -r line; do log "  $name: $line"; done
  fi
}

run_reference() { # model mode gpus [flags: comma-separated, each passed as --FLAG]
  local model=$1 mode=$2 np=$3 flags=${4:-}
  local name="$model:$mode${flags:+:$flags}" item="reference:$model:$mode:$np${flags:+:$flags}"
  local file="$model-$mode-$np${flags:+-${flags//,/-}}"
  need_gpus "$np" "$item" || return
  local budget
  budget=$(item_budget) || { log "skip $item: out of time budget"; return; }
  local logfile="$OUT/logs/reference-$file.log"
  local cmd=("$PYTHON" bench/gpu/reference.py --model "$model" --mode "$mode" --steps 30 --warmup 10)
  local flag extra=()
  [ -n "$flags" ] && IFS=, read -ra extra <<< "$flags"
  for flag in "${extra[@]}"; do cmd+=("--$flag"); done
  [ "$np" -gt 1 ] && cmd=(mpirun -np "$np" --bind-to none -x NCCL_NVLS_ENABLE=0 "${cmd[@]}")
  log "reference:$name on $np GPU(s) (limit ${budget}s)"
  local t0=$SECONDS rc=0
  timeout -k 15 "$budget" "${cmd[@]}" > "$logfile.out" 2> "$logfile" || rc=$?
  grep '^{' "$logfile.out" >> "$OUT/results/reference.jsonl"
  cat "$logfile.out" >> "$logfile"
  rm -f "$logfile.out"
  manifest reference "$name" "$np" "$rc" $((SECONDS - t0)) "logs/reference-$file.log" "${cmd[@]}"
  if [ "$rc" -ne 0 ]; then
    tail -15 "$logfile"
    fail "$item exited $rc (logs/reference-$file.log)"
  else
    log "reference:$name done in $((SECONDS - t0)) s: $(tail -1 "$OUT/results/reference.jsonl" | cut -c1-160)"
  fi
}

# Profiles (Chrome traces) stay on the host; kernels.md in results/ summarizes them.
PROF=${PROF_DIR:-${TMPDIR:-/tmp}/parallax-profiles}

profile_parallax() { # spec name: steps 20-24 of the spec under the Kineto profiler
  local name=$1 spec="bench/gpu/specs/$1.toml"
  [ -f "$spec" ] || { fail "no spec $spec"; return; }
  [ -x "$BUILD/app/parallax-worker" ] || { fail "profile:$name: no worker in $BUILD"; return; }
  local np budget rundir rc=0 t0=$SECONDS
  np=$(spec_ranks "$spec")
  need_gpus "$np" "profile:$name" || return
  budget=$(item_budget) || { log "skip profile:$name: out of time budget"; return; }
  mkdir -p "$PROF"
  rundir=$(mktemp -d "$(scratch_root)/parallax-profile.XXXXXX")
  log "profile:$name on $np GPU(s) (limit ${budget}s)"
  timeout -k 15 "$budget" mpirun -np "$np" --bind-to none -x NCCL_NVLS_ENABLE=0 -x OMP_NUM_THREADS="$BENCH_THREADS" \
    "$BUILD/app/parallax-worker" --spec "$spec" --run-dir "$rundir" --threads "$BENCH_THREADS" \
    --profile-steps 20:24 --profile-out "$PROF/parallax-$name.json" > "$OUT/logs/profile-$name.log" 2>&1 || rc=$?
  rm -rf "$rundir"
  # Several ranks write FILE-rank<R>.json; rank 0's stands for the run in the kernel table.
  if [ "$np" -gt 1 ] && [ -s "$PROF/parallax-$name-rank0.json" ]; then
    mv "$PROF/parallax-$name-rank0.json" "$PROF/parallax-$name.json"
    rm -f "$PROF/parallax-$name"-rank*.json
  fi
  if [ "$rc" -ne 0 ] || [ ! -s "$PROF/parallax-$name.json" ]; then
    tail -15 "$OUT/logs/profile-$name.log"
    fail "profile:$name exited $rc (logs/profile-$name.log)"
  else
    log "profile:$name done in $((SECONDS - t0)) s"
  fi
}

profile_reference() { # model mode: 5 steps after 10 warm-up steps under torch.profiler
  local model=$1 mode=$2 budget rc=0 t0=$SECONDS
  budget=$(item_budget) || { log "skip profile-reference:$model:$mode: out of time budget"; return; }
  mkdir -p "$PROF"
  log "profile-reference:$model:$mode (limit ${budget}s)"
  timeout -k 15 "$budget" "$PYTHON" bench/gpu/reference.py --model "$model" --mode "$mode" --steps 10 --warmup 10 \
    --profile-out "$PROF/reference-$model-$mode.json" > "$OUT/logs/profile-reference-$model-$mode.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ] || [ ! -s "$PROF/reference-$model-$mode.json" ]; then
    tail -15 "$OUT/logs/profile-reference-$model-$mode.log"
    fail "profile-reference:$model:$mode exited $rc"
  else
    log "profile-reference:$model:$mode done in $((SECONDS - t0)) s"
  fi
}

kernels_table() {
  local traces=() f
  for f in "$PROF"/*.json; do [ -f "$f" ] && traces+=("$(basename "$f" .json)=$f"); done
  [ ${#traces[@]} -gt 0 ] || { fail "kernels: no profiles in $PROF"; return; }
  "$PYTHON" bench/gpu/kernels.py --steps 5 "${traces[@]}" > "$OUT/results/kernels.md" 2>> "$OUT/run.log" &&
    cat "$OUT/results/kernels.md" || fail "kernels (bench/gpu/kernels.py)"
}

# A spec through the product's own path: parallax-cli supervises mpirun and the workers and stores
# everything; its report is what the console's store holds. The store and the runs' folders (with
# the end-of-run checkpoint) stay in scratch; the store file is copied to results/ afterwards.
report_run() { # spec name
  local name=$1 spec="bench/gpu/specs/$1.toml"
  [ -f "$spec" ] || { fail "no spec $spec"; return; }
  [ -x "$BUILD/app/parallax-cli" ] || { fail "report:$name: no parallax-cli in $BUILD; run the build item first"; return; }
  local np budget rc=0 t0=$SECONDS store runname
  np=$(spec_ranks "$spec")
  need_gpus "$np" "report:$name" || return
  budget=$(item_budget) || { log "skip report:$name: out of time budget"; return; }
  store="$(scratch_root)/parallax-device-store/store.db"
  mkdir -p "$(dirname "$store")"
  runname=$(awk -F'"' '/^name *=/ {print $2; exit}' "$spec")
  log "report:$name on $np GPU(s) through parallax-cli (limit ${budget}s)"
  timeout -k 15 "$budget" "$BUILD/app/parallax-cli" --store "$store" run "$spec" > "$OUT/logs/report-$name.log" 2>&1 || rc=$?
  "$BUILD/app/parallax-cli" --store "$store" report "$runname" --from-step 10 > "$OUT/results/report-$name.txt" 2>&1
  if [ "$rc" -ne 0 ]; then
    tail -15 "$OUT/logs/report-$name.log"
    "$BUILD/app/parallax-cli" --store "$store" show "$runname" >> "$OUT/results/report-$name.txt" 2>&1
    fail "report:$name: parallax-cli run exited $rc (logs/report-$name.log)"
  else
    log "report:$name done in $((SECONDS - t0)) s"
  fi
  tee -a "$OUT/run.log" < "$OUT/results/report-$name.txt"
  rm -rf "$(dirname "$store")/runs"
  cp "$store" "$OUT/results/store.db" 2>/dev/null || true
}

# The Qwen2.5-VL-7B comparison's inputs, made once: a model folder of random bf16 weights (16.6 GB),
# the image and the conversations. build/vl-bench points into scratch (memory where there is room).
vl_data() {
  if [ -f build/vl-bench/.complete ]; then return 0; fi
  local tokenizer=${VL_TOKENIZER:-build/dev/npm-oracle/qwen/tokenizer.json} root
  [ -f "$tokenizer" ] || { fail "vl-lora-compare: no Qwen tokenizer.json at $tokenizer (set VL_TOKENIZER)"; return 1; }
  root="$(scratch_root)/parallax-vl-bench"
  mkdir -p build
  [ -e build/vl-bench ] || { mkdir -p "$root" && ln -sfn "$root" build/vl-bench; }
  log "vl-lora-compare: inputs into $(cd build/vl-bench && pwd -P)"
  local t0=$SECONDS
  if ! "$PYTHON" bench/gpu/make_vl_data.py build/vl-bench --tokenizer "$tokenizer" > "$OUT/logs/vl-data.log" 2>&1; then
    tail -15 "$OUT/logs/vl-data.log"
    fail "vl-lora-compare: bench/gpu/make_vl_data.py (logs/vl-data.log)"
    return 1
  fi
  touch build/vl-bench/.complete
  log "vl-lora-compare: inputs made in $((SECONDS - t0)) s: $(tail -1 "$OUT/logs/vl-data.log")"
}

# One reference run: the script's JSON line into results/REF.jsonl, at most 200 s (the rest of the
# call is Parallax's). Fails (status 1) when skipped or when the script fails.
# usage: script_reference ITEM REF SPEC SCRIPT ARG...   (the environment's PYTHONPATH reaches the script)
script_reference() {
  local item=$1 ref=$2 spec=$3
  shift 3
  local budget rc=0 t0=$SECONDS
  budget=$(item_budget) || { log "skip $item's $ref: out of time budget"; return 1; }
  [ "$budget" -gt 200 ] && budget=200
  local cmd=("$PYTHON" "$@")
  log "$item: $ref (limit ${budget}s)"
  timeout -k 15 "$budget" "${cmd[@]}" > "$OUT/results/$ref.jsonl" 2> "$OUT/logs/$ref.log" || rc=$?
  manifest reference "$spec" 1 "$rc" $((SECONDS - t0)) "logs/$ref.log" "${cmd[@]}"
  if [ "$rc" -ne 0 ]; then
    tail -25 "$OUT/logs/$ref.log"
    fail "$item: $1 exited $rc (logs/$ref.log)"
    return 1
  fi
  log "$item: $ref done in $((SECONDS - t0)) s: $(cut -c1-400 "$OUT/results/$ref.jsonl")"
}

# The script's --compare of results/REF.jsonl and Parallax's log of SPEC -> results/TABLE.md.
# usage: compare_table TABLE REF SPEC SCRIPT
compare_table() {
  local plog="$OUT/results/parallax-$3.log"
  [ -f "$plog" ] || return 1
  "$PYTHON" "$4" --compare "$OUT/results/$2.jsonl" "$plog" > "$OUT/results/$1.md" 2>> "$OUT/run.log" &&
    tee -a "$OUT/run.log" < "$OUT/results/$1.md" || fail "$1: the comparison ($4 --compare)"
}

# A comparison item: the reference script (script_reference), Parallax's spec, then the script's
# --compare over both -> results/ITEM.md.
# usage: compare_item ITEM REF SPEC SCRIPT ARG...   (the environment's PYTHONPATH reaches the script)
compare_item() {
  local item=$1 ref=$2 spec=$3 script=$4 ok=1
  script_reference "$@" || ok=0
  run_parallax "$spec"
  [ "$ok" -eq 1 ] && compare_table "$item" "$ref" "$spec" "$script"
}

vl_compare() {
  need_gpus 1 vl-lora-compare || return
  vl_data || return
  compare_item vl-lora-compare hf-qwen2_5_vl qwen2_5_vl-7b-lora-1gpu bench/gpu/hf_qwen2_5_vl.py \
    --model build/vl-bench/qwen2_5_vl-7b --data build/vl-bench/chats.jsonl
}

# The Qwen-Image comparison's inputs, made once: four samples of latents and prompt states (5.7 MB).
qi_data() {
  if [ -f build/qi-bench/.complete ]; then return 0; fi
  mkdir -p build/qi-bench
  if ! "$PYTHON" bench/gpu/make_qi_data.py build/qi-bench/latents > "$OUT/logs/qi-data.log" 2>&1; then
    tail -15 "$OUT/logs/qi-data.log"
    fail "qi-lora-compare: bench/gpu/make_qi_data.py (logs/qi-data.log)"
    return 1
  fi
  touch build/qi-bench/.complete
  log "qi-lora-compare: inputs made: $(tail -1 "$OUT/logs/qi-data.log")"
}

# diffusers from source: .deps-diffusers.tar.xz (a tar of the folder diffusers/) unpacked once into
# .deps-diffusers, which goes on PYTHONPATH.
unpack_diffusers() {
  [ -f .deps-diffusers/diffusers/__init__.py ] && return 0
  [ -f .deps-diffusers.tar.xz ] ||
    { fail "qi-lora-compare: no .deps-diffusers.tar.xz (a tar of diffusers' src/diffusers folder) in $repo"; return 1; }
  mkdir -p .deps-diffusers
  tar -xJf .deps-diffusers.tar.xz -C .deps-diffusers && [ -f .deps-diffusers/diffusers/__init__.py ] ||
    { fail "qi-lora-compare: .deps-diffusers.tar.xz did not give .deps-diffusers/diffusers/__init__.py"; return 1; }
}

qi_compare() {
  need_gpus 1 qi-lora-compare || return
  qi_data || return
  unpack_diffusers || return
  PYTHONPATH="$repo/.deps-diffusers${PYTHONPATH:+:$PYTHONPATH}" compare_item qi-lora-compare hf-qwen_image \
    qwen_image-20b-lora-1gpu bench/gpu/hf_qwen_image.py --data build/qi-bench/latents --warmup 2 --steps 6
}

# The same without activation checkpointing on either side (about 90 GiB: an H200).
qi_compare_noac() {
  need_gpus 1 qi-lora-compare-noac || return
  qi_data || return
  unpack_diffusers || return
  PYTHONPATH="$repo/.deps-diffusers${PYTHONPATH:+:$PYTHONPATH}" compare_item qi-lora-compare-noac hf-qwen_image-noac \
    qwen_image-20b-lora-noac-1gpu bench/gpu/hf_qwen_image.py --data build/qi-bench/latents --warmup 2 --steps 6 \
    --no-checkpointing --label no-checkpointing
}

# With train.recompute_blocks: Parallax recomputes only as many blocks as an 80 GB card needs
# (bench/gpu/specs/qwen_image-20b-lora-recompute-1gpu.toml) against diffusers + PEFT with
# enable_gradient_checkpointing (every block: the one switch its training scripts offer); then
# diffusers with the same first blocks checkpointed (hf_qwen_image.py --recompute-blocks) against the
# same Parallax run.
qi_compare_recompute() {
  need_gpus 1 qi-lora-compare-recompute || return
  qi_data || return
  unpack_diffusers || return
  local spec=qwen_image-20b-lora-recompute-1gpu script=bench/gpu/hf_qwen_image.py n
  n=$(sed -n 's/^recompute_blocks *= *\([0-9]*\).*/\1/p' "bench/gpu/specs/$spec.toml")
  [ -n "$n" ] || { fail "qi-lora-compare-recompute: no recompute_blocks in bench/gpu/specs/$spec.toml"; return 1; }
  export PYTHONPATH="$repo/.deps-diffusers${PYTHONPATH:+:$PYTHONPATH}"
  compare_item qi-lora-compare-recompute hf-qwen_image "$spec" "$script" --data build/qi-bench/latents \
    --warmup 2 --steps 6
  script_reference qi-lora-compare-recompute hf-qwen_image-recompute "$spec" "$script" --data build/qi-bench/latents \
    --warmup 2 --steps 6 --recompute-blocks "$n" --label "recompute-$n" &&
    compare_table qi-lora-compare-recompute-same hf-qwen_image-recompute "$spec" "$script"
}

summary() {
  "$PYTHON" bench/gpu/summarize.py "$OUT/results" > "$OUT/benchmarks.md" 2>> "$OUT/run.log" &&
    log "summary: $OUT/benchmarks.md" && cat "$OUT/benchmarks.md"
}

items=("$@")
[ ${#items[@]} -eq 0 ] && items=(build tests bench-1gpu bench-2gpu)
benched=0
for item in "${items[@]}"; do
  case "$item" in
    build) do_build ;;
    tests) do_tests ;;
    bench-1gpu)
      run_parallax gpt-124m-1gpu
      run_reference 124m eager 1
      run_reference 124m compile 1
      benched=1 ;;
    bench-2gpu-parallax)
      for name in gpt-124m-dp2 gpt-1.3b-zero3-dp2 gpt-1.3b-pp2-1f1b gpt-1.3b-tp2; do
        run_parallax "$name"
      done
      benched=1 ;;
    bench-2gpu-reference)
      run_reference 124m ddp 2
      run_reference 124m ddp-compile 2
      run_reference 1.3b fsdp2 2
      run_reference 1.3b ddp 2
      benched=1 ;;
    bench-2gpu)
      for name in gpt-124m-dp2 gpt-1.3b-zero3-dp2 gpt-1.3b-pp2-1f1b gpt-1.3b-tp2; do
        run_parallax "$name"
      done
      run_reference 124m ddp 2
      run_reference 124m ddp-compile 2
      run_reference 1.3b fsdp2 2
      run_reference 1.3b ddp 2
      benched=1 ;;
    bench-4gpu)
      for name in gpt-1.3b-dp2-tp2 gpt-1.3b-dp2-pp2-1f1b gpt-1.3b-tp2-pp2-1f1b gpt-1.3b-tp2-pp2-interleaved; do
        report_run "$name"
      done ;;
    parallax:*) run_parallax "${item#parallax:}"; benched=1 ;;
    report:*) report_run "${item#report:}" ;;
    profile:*) profile_parallax "${item#profile:}" ;;
    profile-reference:*:*)
      IFS=: read -r _ model mode <<< "$item"
      profile_reference "$model" "$mode" ;;
    kernels) kernels_table ;;
    vl-data) vl_data ;;
    vl-lora-compare) vl_compare ;;
    qi-data) qi_data ;;
    qi-lora-compare) qi_compare ;;
    qi-lora-compare-noac) qi_compare_noac ;;
    qi-lora-compare-recompute) qi_compare_recompute ;;
    reference:*:*:*)
      IFS=: read -r _ model mode np flags <<< "$item"
      run_reference "$model" "$mode" "$np" "$flags"
      benched=1 ;;
    summary) benched=1 ;;
    *) fail "unknown item '$item' (see the top of packaging/device/run.sh)" ;;
  esac
done
[ "$benched" -eq 1 ] && summary
log "finished in $((SECONDS - started)) s with $failures failure(s); results in $OUT"
[ "$failures" -eq 0 ]
