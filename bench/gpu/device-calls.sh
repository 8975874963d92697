#!/usr/bin/env bash
# The device calls, one function each (docs/runner.md, "vLLM on a GPU"). Run from the repo root there:
#   call 1  carry .gpu-stack/wheels-1:                                                    bench/gpu/device-calls.sh stash
#   call 2  carry .gpu-stack/wheels-2 .gpu-stack/overlay-0.4.0 .gpu-stack/overlay-0.3.0:  bench/gpu/device-calls.sh hf
#   call 3-6  carry .gpu-stack/vllm-N (N = 1..4):                                         bench/gpu/device-calls.sh stash
#   call 7  carry .gpu-stack/vllm-5:                                                       bench/gpu/device-calls.sh vllm-0.4.0
#   call 8  (nothing carried):                                                             bench/gpu/device-calls.sh vllm-0.3.0
# (`gpu-stack.sh chunks` makes the chunks and checks each fits a call beside the tree; `gpu-stack.sh fits
#   DIR...` checks folders carried together, e.g. wheels-2 with the overlays.)
# The fix-only 0.3.0 run on a fresh machine: stash (wheels-1), stash (wheels-2 + overlay-0.3.0), stash (each
#   vllm-N but the last), stack-hf (the last vllm-N), then fix-only-0.3.0 (nothing carried).
# The server line: stash (wheels-1, wheels-2), stash x4 (vllm-1..4), stack-hf (vllm-5), then server-0.7 (nothing
#   carried) or server-0.9 (carrying .gpu-stack/trainer-0.9: speculators 0.9's trainer with transformers 5.19);
#   `stack` in place of stack-hf installs without the hf bench run (server-N makes its own).
# Calls follow each other within the machine's warm time: what earlier calls left in /tmp stays.
# The scripts find everything relative to themselves: where the device tool sends another
# checkout than this one, export this tree (git archive HEAD) with .gpu-stack/<chunk> into an
# ignored folder of that checkout, carry that folder, and `cd` into it first.
set -uo pipefail
export GPU_STACK_HOME=/tmp/gpu-stack
export PYTHONPATH="$GPU_STACK_HOME/site:$PWD" PYTHONUNBUFFERED=1
# vLLM's distributed set-up on a machine whose only reachable interface is loopback.
export VLLM_HOST_IP=127.0.0.1 GLOO_SOCKET_IFNAME=lo NCCL_SOCKET_IFNAME=lo
# NVLink multicast stays off (KINDS.md), also in the workers vLLM starts (they inherit this environment).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export VLLM_WORKER_MULTIPROC_METHOD=spawn VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
W=/tmp/gpu-work
OUT="${OUT:-/tmp/gpu-out}"
mkdir -p "$W" "$OUT"
check() { python3 bench/gpu/device_check.py "$@"; }
keep() {  # the small evidence files of the runs named, into $OUT/NAME.tgz
    local name="$1"; shift
    (cd "$W" && tar czf "$OUT/$name.tgz" --ignore-failed-read $(for r in "$@"; do
        ls -d "$r"/*/stage.log "$r"/*/manifest.json "$r"/preflight.json "$r".traceback.txt "$r".toml 2>/dev/null; done))
}

case "${1:-}" in
    hf)
        bench/gpu/gpu-stack.sh stash && bench/gpu/gpu-stack.sh install small || exit 1
        nvidia-smi -L; python3 -c 'import sys, torch, transformers, speculators; print(sys.version.split()[0], torch.__version__, transformers.__version__, speculators.__version__)'
        check model "$W" && check pipeline "$W" hf --backend hf && check load "$W" hf
        keep hf hf ;;
    stash)
        bench/gpu/gpu-stack.sh stash ;;
    vllm-0.4.0)
        bench/gpu/gpu-stack.sh stash && bench/gpu/gpu-stack.sh install vllm || exit 1
        VLLM_ENABLE_V1_MULTIPROCESSING=0 check stack "$W" || exit 1
        check pipeline "$W" vllm-0.4.0 --backend vllm
        check pipeline "$W" vllm-0.4.0-fixed --backend vllm --overlay "$GPU_STACK_HOME/overlay-0.4.0" \
            && check compare "$W" hf vllm-0.4.0-fixed && check load "$W" vllm-0.4.0-fixed
        keep vllm-0.4.0 vllm-0.4.0 vllm-0.4.0-fixed ;;
    vllm-0.3.0)
        check pipeline "$W" vllm-0.3.0-fixed --backend vllm --overlay "$GPU_STACK_HOME/overlay-0.3.0" \
            && check compare "$W" hf vllm-0.3.0-fixed
        python3 bench/gpu/hand_fixes.py "$GPU_STACK_HOME/overlay-0.3.0" "$GPU_STACK_HOME/overlay-0.3.0-hand"
        check pipeline "$W" vllm-0.3.0-hand --backend vllm --overlay "$GPU_STACK_HOME/overlay-0.3.0-hand" \
            && check compare "$W" hf vllm-0.3.0-hand && check load "$W" vllm-0.3.0-hand
        keep vllm-0.3.0 vllm-0.3.0-fixed vllm-0.3.0-hand ;;
    rerun-0.3.0)  # a fresh machine: the stack, the model, then 0.3.0 with the CacheConfig edit alone and with all three
        bench/gpu/gpu-stack.sh stash && bench/gpu/gpu-stack.sh install small && bench/gpu/gpu-stack.sh install vllm || exit 1
        [[ -d "$W/model" ]] || check model "$W" || exit 1
        python3 bench/gpu/hand_fixes.py "$GPU_STACK_HOME/overlay-0.3.0" "$GPU_STACK_HOME/overlay-0.3.0-cache" --only cache-config
        check pipeline "$W" vllm-0.3.0-cache --backend vllm --overlay "$GPU_STACK_HOME/overlay-0.3.0-cache"
        python3 bench/gpu/hand_fixes.py "$GPU_STACK_HOME/overlay-0.3.0" "$GPU_STACK_HOME/overlay-0.3.0-hand3"
        check pipeline "$W" vllm-0.3.0-hand3 --backend vllm --overlay "$GPU_STACK_HOME/overlay-0.3.0-hand3" \
            && check load "$W" vllm-0.3.0-hand3
        keep vllm-0.3.0-rerun vllm-0.3.0-cache vllm-0.3.0-hand3 ;;
    stack)  # the stack alone (what server-0.7/0.9 need): after the calls stashing all but the last chunk, carrying it
        bench/gpu/gpu-stack.sh stash && bench/gpu/gpu-stack.sh install small && bench/gpu/gpu-stack.sh install vllm ;;
    stack-hf)  # a fresh machine, after calls carrying the wheels, the overlay and every vllm-N but the last: this one carries the last
        bench/gpu/gpu-stack.sh stash && bench/gpu/gpu-stack.sh install small && bench/gpu/gpu-stack.sh install vllm || exit 1
        check model "$W" && check pipeline "$W" hf --backend hf
        keep stack-hf hf ;;
    fix-only-0.3.0)  # speculators 0.3.0 patched by `apiaudit fix --into` alone, no edit by hand
        check pipeline "$W" vllm-0.3.0-fix-only --backend vllm --overlay "$GPU_STACK_HOME/overlay-0.3.0" \
            && check compare "$W" hf vllm-0.3.0-fix-only && check load "$W" vllm-0.3.0-fix-only
        keep vllm-0.3.0-fix-only vllm-0.3.0-fix-only ;;
    server-0.7)  # the server line (vllm serve + speculators 0.7's trainer), after the calls that install the stack
        # The trainer's environment: the stack with speculators 0.7 in front of its 0.4.0.
        printf '#!/bin/sh\nPYTHONPATH="%s/speculators-0.7:$PYTHONPATH" exec python3 "$@"\n' "$GPU_STACK_HOME" > "$W/trainer-python"
        chmod +x "$W/trainer-python"
        python3 bench/gpu/server_pipeline.py stack "$W" --trainer-python "$W/trainer-python"
        python3 bench/gpu/server_pipeline.py all "$W/server-line" --trainer-python "$W/trainer-python"
        (cd "$W/server-line" && tar czf "$OUT/server-0.7.tgz" --ignore-failed-read *.toml *.traceback.txt \
            */*/stage.log */*/manifest.json */extract/server.log */train/trainer.log 2>/dev/null) ;;
    server-0.9)  # the server line with speculators 0.9's trainer, in a third target (transformers 5.19, hub 1.x)
        bench/gpu/gpu-stack.sh stash && bench/gpu/gpu-stack.sh install trainer-0.9 || exit 1
        printf '#!/bin/sh\nPYTHONPATH="%s/speculators-0.9:$PYTHONPATH" exec python3 "$@"\n' "$GPU_STACK_HOME" > "$W/trainer-python-0.9"
        chmod +x "$W/trainer-python-0.9"
        python3 bench/gpu/server_pipeline.py stack "$W" --trainer-python "$W/trainer-python-0.9"
        # speculators 0.9's fused loss kernel fails under torch 2.11's compiler (dynamo: "ListVariable ...
        # is already tracked for mutation", the Triton autotune configs of losses/fused.py): its eager loss.
        python3 bench/gpu/server_pipeline.py all "$W/server-line-0.9" --trainer-python "$W/trainer-python-0.9" \
            --trainer-flags '["--loss-implementation", "eager"]'
        (cd "$W/server-line-0.9" && tar czf "$OUT/server-0.9.tgz" --ignore-failed-read *.toml *.traceback.txt \
            */*/stage.log */*/manifest.json */extract/server.log */train/trainer.log 2>/dev/null) ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
esac
