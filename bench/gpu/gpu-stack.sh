#!/usr/bin/env bash
# The Python stack for apiaudit's runner on vLLM 0.20.0 on the GPU machine, carried as wheels.
#
#   bench/gpu/gpu-stack.sh download   # fetch the pinned wheels into .gpu-stack/dl, check them against the lock
#   bench/gpu/gpu-stack.sh lock       # (re)write bench/gpu/gpu-stack.lock from what download fetched
#   bench/gpu/gpu-stack.sh check      # every run-time requirement is carried or in the machine's image
#   bench/gpu/gpu-stack.sh chunks     # .gpu-stack/wheels/ (the small wheels) and .gpu-stack/vllm-N/ (the vLLM wheel in parts)
#   bench/gpu/gpu-stack.sh dryrun     # install everything here with --no-deps --no-index --target (no import)
#
# On the device (docs/runner.md, "vLLM on a GPU"): `install` joins the parts, checks every
# sha256 against the lock and installs with --no-deps --no-index --target "$GPU_STACK_SITE".
#   bench/gpu/gpu-stack.sh stash      # move this call's carried chunk out of the tree into $GPU_STACK_HOME
#   bench/gpu/gpu-stack.sh install    # join, verify, install (after every chunk is stashed)
#
# Wheels are never committed: the lock holds their names and sha256s only.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
STACK="$ROOT/.gpu-stack"
LOCK="$HERE/gpu-stack.lock"
REQUIREMENTS="$HERE/requirements.in"
PYTHON="${PYTHON:-python3}"
# One part of the vLLM wheel per device call: a call carries at most 64 MiB on disk, the tree
# included (about 6.5 MiB now), so five parts.
PART_BYTES="${GPU_STACK_PART_BYTES:-50000000}"
GPU_STACK_HOME="${GPU_STACK_HOME:-/tmp/gpu-stack}"
GPU_STACK_SITE="${GPU_STACK_SITE:-$GPU_STACK_HOME/site}"
# The server line's trainer: speculators 0.7 in a target of its own (bench/gpu/server_pipeline.py).
SERVER_SPECULATORS="0.7.0.2"
# ... with datasets 5.0.1 in front of the stack's 4.6.0: 4.x's torch formatter imports torchvision.io's
# VideoReader whenever torchvision is loaded, which the image's torchvision no longer has (5.0 catches it).
SERVER_DATASETS="5.0.1"
# speculators 0.9's trainer needs transformers >= 5.0 (vLLM 0.20 excludes only 5.0-5.5.0, so 5.19
# fits both): a third target, carried as its own chunk (.gpu-stack/trainer-0.9) with what
# transformers 5 and huggingface-hub 1.x need newer than the image or the stack holds.
TRAINER_NEXT=(speculators==0.9.0 hs-connectors==0.9.0 transformers==5.19.0 tokenizers==0.23.3
    huggingface-hub==1.33.0 safetensors==0.8.0 regex==2026.11.19 click==8.4.2 hf-xet==1.6.0
    "datasets==$SERVER_DATASETS")
# The machine runs CPython 3.12 on x86-64 (glibc new enough for manylinux_2_35).
PLATFORM_ARGS=(--python-version 3.12 --implementation cp --only-binary=:all:)
for tag in 2_35 2_34 2_31 2_28 2_27 2_26 2_24 2_17; do PLATFORM_ARGS+=(--platform "manylinux_${tag}_x86_64"); done
PLATFORM_ARGS+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64)

# GPU_STACK_SIMULATE=1 runs stash/install here (another Python): pip then installs for the machine's platform.
INSTALL_ARGS=(-q --no-deps --no-index --no-compile --no-cache-dir)
[[ "${GPU_STACK_SIMULATE:-}" == 1 ]] && INSTALL_ARGS+=("${PLATFORM_ARGS[@]}")

requirements() { sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$REQUIREMENTS" | grep -v '^$'; }

cmd_download() {
    mkdir -p "$STACK/dl"
    # A private working directory: nothing in the tree can be picked up by pip.
    (cd "$STACK/dl" && "$PYTHON" -m pip download -q --no-deps "${PLATFORM_ARGS[@]}" -d "$STACK/dl" $(requirements))
    # speculators: two releases, two targets (one version of each package per target).
    for v in 0.4.0 0.3.0; do
        mkdir -p "$STACK/dl/speculators-$v"
        (cd "$STACK/dl" && "$PYTHON" -m pip download -q --no-deps --only-binary=:all: -d "$STACK/dl/speculators-$v" "speculators==$v")
    done
    # The server line: what vLLM's api_server imports beyond the stack, and speculators 0.7 (its own target).
    mkdir -p "$STACK/dl/server" "$STACK/dl/speculators-0.7"
    (cd "$STACK/dl" && "$PYTHON" -m pip download -q --no-deps "${PLATFORM_ARGS[@]}" -d "$STACK/dl/server" \
        $(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$HERE/server-requirements.in" | grep -v '^$'))
    (cd "$STACK/dl" && "$PYTHON" -m pip download -q --no-deps --only-binary=:all: -d "$STACK/dl/speculators-0.7" \
        "speculators==$SERVER_SPECULATORS" "datasets==$SERVER_DATASETS")
    mkdir -p "$STACK/dl/speculators-0.9"
    (cd "$STACK/dl" && "$PYTHON" -m pip download -q --no-deps "${PLATFORM_ARGS[@]}" -d "$STACK/dl/speculators-0.9" \
        "${TRAINER_NEXT[@]}")
    if [[ -f "$LOCK" ]]; then (cd "$STACK/dl" && sha256sum --quiet -c "$LOCK") && echo "all wheels match $LOCK"; fi
}

cmd_lock() {
    (cd "$STACK/dl" && find . -name '*.whl' -printf '%P\n' | LC_ALL=C sort | xargs sha256sum) > "$LOCK"
    echo "$(wc -l < "$LOCK") wheels locked in $LOCK"
}

cmd_check() { "$PYTHON" "$HERE/stack_check.py" "$STACK/dl" "$LOCK"; }

cmd_chunks() {
    rm -rf "$STACK/wheels" "$STACK"/vllm-* "$STACK"/trainer-0.9
    mkdir -p "$STACK/wheels" "$STACK/trainer-0.9"
    (cd "$STACK/dl" && find . -name '*.whl' ! -name 'vllm-*' ! -path './speculators-0.9/*' -printf '%P\n' | while read -r f; do
        mkdir -p "$STACK/wheels/$(dirname "$f")"; cp "$f" "$STACK/wheels/$f"; done)
    # The 0.9 trainer's target does not fit beside the small wheels in one call: a chunk of its own.
    [[ -d "$STACK/dl/speculators-0.9" ]] && cp "$STACK"/dl/speculators-0.9/*.whl "$STACK/trainer-0.9/"
    local wheel; wheel="$(cd "$STACK/dl" && ls vllm-*.whl)"
    local n=0
    split -b "$PART_BYTES" -d -a 1 "$STACK/dl/$wheel" "$STACK/part."
    for part in "$STACK"/part.*; do
        n=$((n + 1)); mkdir -p "$STACK/vllm-$n"; mv "$part" "$STACK/vllm-$n/$wheel.${part##*.}"
    done
    (cd "$STACK" && find wheels vllm-* trainer-0.9 -type f | LC_ALL=C sort | xargs sha256sum) > "$HERE/gpu-stack.chunks"
    du -sb "$STACK/wheels" "$STACK"/vllm-* "$STACK/trainer-0.9"
    echo "carry, one call each: .gpu-stack/wheels $(cd "$STACK" && ls -d vllm-* | sed 's|^|.gpu-stack/|' | tr '\n' ' ')(and .gpu-stack/trainer-0.9 with the server-0.9 call)"
}

cmd_dryrun() {
    local target; target="$(mktemp -d)"
    (cd "$target" && "$PYTHON" -m pip install -q --no-deps --no-index --no-compile "${PLATFORM_ARGS[@]}" --target "$target/site" \
        $(find "$STACK/dl" -maxdepth 1 -name '*.whl' | LC_ALL=C sort) "$STACK"/dl/speculators-0.4.0/*.whl)
    echo "installed $(ls "$target/site" | grep -c dist-info) distributions into $target/site"
    rm -rf "$target"
}

cmd_stash() {
    mkdir -p "$GPU_STACK_HOME"
    local moved=0
    for dir in "$STACK"/wheels "$STACK"/vllm-* "$STACK"/overlay-* "$STACK"/trainer-*; do
        [[ -d "$dir" ]] || continue
        cp -r "$dir" "$GPU_STACK_HOME/" && rm -rf "$dir" && moved=$((moved + 1))
    done
    echo "stashed $moved folder(s); in $GPU_STACK_HOME: $(cd "$GPU_STACK_HOME" && ls | tr "\n" " ")"
}

# `install small`: every wheel but vLLM's (enough for the hf backend); `install vllm`: join its parts, then it;
# `install trainer-0.9`: speculators 0.9's trainer target (after the trainer-0.9 chunk is stashed).
cmd_install() {
    local what="${1:-small}"
    cd "$GPU_STACK_HOME"
    mkdir -p dl
    if [[ "$what" == trainer-0.9 ]]; then
        grep ' trainer-0.9/' "$HERE/gpu-stack.chunks" | sha256sum --quiet -c -
        mkdir -p dl/speculators-0.9 && cp trainer-0.9/*.whl dl/speculators-0.9/
        (cd dl && grep ' speculators-0.9/' "$LOCK" | sha256sum --quiet -c -)
        python3 -m pip install "${INSTALL_ARGS[@]}" --upgrade --target "$GPU_STACK_HOME/speculators-0.9" dl/speculators-0.9/*.whl
        echo "installed speculators 0.9's trainer target into $GPU_STACK_HOME/speculators-0.9"
        return
    fi
    if [[ "$what" == small ]]; then
        grep ' wheels/' "$HERE/gpu-stack.chunks" | sha256sum --quiet -c -
        cp -r wheels/. dl/
        (cd dl && grep -v -e ' vllm-' -e ' speculators-0.9/' "$LOCK" | sha256sum --quiet -c -) \
            && echo "$(grep -vc -e ' vllm-' -e ' speculators-0.9/' "$LOCK") wheels match the lock"
        python3 -m pip install "${INSTALL_ARGS[@]}" --upgrade --target "$GPU_STACK_SITE" \
            $(find dl -maxdepth 1 -name '*.whl' ! -name 'vllm-*' | LC_ALL=C sort) dl/speculators-0.4.0/*.whl
        python3 -m pip install "${INSTALL_ARGS[@]}" --upgrade \
            --target "$GPU_STACK_HOME/speculators-0.3.0" dl/speculators-0.3.0/*.whl
        if [[ -d dl/server ]]; then  # the server line: the api_server's imports, and speculators 0.7 apart
            python3 -m pip install "${INSTALL_ARGS[@]}" --upgrade --target "$GPU_STACK_SITE" dl/server/*.whl
            python3 -m pip install "${INSTALL_ARGS[@]}" --upgrade \
                --target "$GPU_STACK_HOME/speculators-0.7" dl/speculators-0.7/*.whl
        fi
        echo "installed into $GPU_STACK_SITE (speculators 0.3.0 apart in $GPU_STACK_HOME/speculators-0.3.0, 0.7 in speculators-0.7)"
        return
    fi
    grep ' vllm-' "$HERE/gpu-stack.chunks" | sha256sum --quiet -c -
    local wheel; wheel="$(cd vllm-1 && ls | sed 's/\.[0-9]$//')"
    # Parts in order: vllm-1 holds .0, vllm-2 holds .1, ...
    : > "dl/$wheel"
    for dir in $(ls -d vllm-* | sort -t- -k2 -n); do cat "$dir"/"$wheel".* >> "dl/$wheel"; done
    (cd dl && grep " $wheel\$" "$LOCK" | sha256sum -c -)
    python3 -m pip install "${INSTALL_ARGS[@]}" --target "$GPU_STACK_SITE" "dl/$wheel"
    echo "installed $wheel into $GPU_STACK_SITE"
}

case "${1:-}" in
    download|lock|check|chunks|dryrun|stash|install) cmd="cmd_$1"; shift; "$cmd" "$@" ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
esac
