#!/usr/bin/env bash
# The Python stack for apiaudit's runner on vLLM 0.20.0 on the GPU machine, carried as wheels.
#
#   bench/gpu/gpu-stack.sh download [NAME...]  # the locked wheels (or those NAMEs') into .gpu-stack/dl, each checked
#   bench/gpu/gpu-stack.sh check      # every run-time requirement is carried or in the machine's image
#   bench/gpu/gpu-stack.sh chunks     # .gpu-stack/wheels-N (the small wheels), vllm-N (the vLLM wheel in parts),
#                                     # trainer-0.9; fails where a chunk and a copy of the tree exceed what a call carries
#   bench/gpu/gpu-stack.sh fits DIR...  # whether these folders and a copy of the tree fit one call, with room to spare
#   bench/gpu/gpu-stack.sh dryrun     # install everything here with --no-deps --no-index --target (no import)
# To move the stack on (new pins in requirements.in): `update` fetches the newest wheels they allow, then `lock`
# (re)writes bench/gpu/gpu-stack.lock from them. `download` reads the lock alone: the same wheels on any day.
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
STACK="${GPU_STACK_DIR:-$ROOT/.gpu-stack}"
LOCK="$HERE/gpu-stack.lock"
CHUNKS="${GPU_STACK_CHUNKS:-$HERE/gpu-stack.chunks}"
REQUIREMENTS="$HERE/requirements.in"
PYTHON="${PYTHON:-python3}"
# A device call carries at most 64 MiB: the chunk it carries and a copy of the working tree (its
# tracked files and those git does not ignore, fixtures/ included). Each chunk leaves SPARE_BYTES
# free beside the tree, for the tree's growth and the small folders (overlays) that travel with it.
CARRY_LIMIT_BYTES="${GPU_STACK_CARRY_LIMIT_BYTES:-67108864}"
SPARE_BYTES="${GPU_STACK_SPARE_BYTES:-8388608}"
# One part of the vLLM wheel per call (five parts), and the small wheels packed into folders of at most this.
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

# The lock's wheels of one target folder ("." for the top level) as hash-checked pip requirements:
# NAME==VERSION --hash=sha256:..., one version of each; with NAMEs, only those distributions.
locked_requirements() {
    local dir="$1"; shift
    awk -v dir="$dir" -v only="$*" '
        BEGIN { n = split(only, names, " "); for (i = 1; i <= n; i++) { key = tolower(names[i]); gsub(/[-_.]+/, "_", key); wanted[key] = 1 } }
        { parts = split($2, p, "/"); folder = parts > 1 ? p[1] : "."; if (folder != dir) next
          split(p[parts], f, "-"); key = tolower(f[1]); gsub(/[-_.]+/, "_", key)
          if (n && !(key in wanted)) next
          print f[1] "==" f[2] " --hash=sha256:" $1 }' "$LOCK"
}

cmd_download() {
    local dirs dir reqs; reqs="$(mktemp -d)"
    dirs="$(awk '{ parts = split($2, p, "/"); print (parts > 1 ? p[1] : ".") }' "$LOCK" | LC_ALL=C sort -u)"
    for dir in $dirs; do
        locked_requirements "$dir" "$@" > "$reqs/requirements.txt"
        [[ -s "$reqs/requirements.txt" ]] || continue
        mkdir -p "$STACK/dl/$dir"
        # The lock is the input: exact versions, each wheel checked against its sha256 as pip fetches it,
        # from a private working directory (nothing in the tree can be picked up by pip).
        (cd "$reqs" && "$PYTHON" -m pip download -q --no-deps --require-hashes "${PLATFORM_ARGS[@]}" \
            -d "$STACK/dl/$dir" -r "$reqs/requirements.txt")
    done
    rm -rf "$reqs"
    if (($#)); then echo "fetched the locked wheels of $* into $STACK/dl"; return; fi
    (cd "$STACK/dl" && sha256sum --quiet -c "$LOCK") && echo "all $(wc -l < "$LOCK") wheels match $LOCK"
}

cmd_update() {
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
    echo "fetched the newest wheels the pins allow into $STACK/dl: bench/gpu/gpu-stack.sh lock records them"
}

cmd_lock() {
    (cd "$STACK/dl" && find . -name '*.whl' -printf '%P\n' | LC_ALL=C sort | xargs sha256sum) > "$LOCK"
    echo "$(wc -l < "$LOCK") wheels locked in $LOCK"
}

cmd_check() { "$PYTHON" "$HERE/stack_check.py" "$STACK/dl" "$LOCK"; }

# Bytes of the working tree a device call copies: tracked files and those git does not ignore
# (in a `git archive` export without .git: everything but .gpu-stack).
tree_bytes() {
    if git -C "$ROOT" rev-parse --git-dir > /dev/null 2>&1; then
        (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 -r stat -c %s 2> /dev/null) \
            | awk '{ s += $1 } END { print s + 0 }'
    else
        du -sb --exclude=.gpu-stack "$ROOT" | cut -f1
    fi
}

# Whether folders carried together fit one call beside a copy of the tree, SPARE_BYTES to spare.
cmd_fits() {
    local tree carried
    tree="$(tree_bytes)"
    carried="$(du -scb "$@" | tail -n 1 | cut -f1)"
    if ((carried + tree + SPARE_BYTES > CARRY_LIMIT_BYTES)); then
        echo "does not fit one call: $* ($carried bytes) and the tree ($tree bytes) leave less than $SPARE_BYTES of the $CARRY_LIMIT_BYTES bytes a call carries" >&2
        return 1
    fi
    echo "$* ($carried bytes) + the tree ($tree bytes): $((CARRY_LIMIT_BYTES - carried - tree)) bytes to spare"
}

cmd_chunks() {
    rm -rf "$STACK"/wheels "$STACK"/wheels-* "$STACK"/vllm-* "$STACK"/trainer-0.9
    mkdir -p "$STACK/trainer-0.9"
    # The small wheels (with their target folders), largest first, each into the first folder it fits
    # in: as few calls as PART_BYTES allows, and the same folders for the same wheels.
    (cd "$STACK/dl" && find . -name '*.whl' ! -name 'vllm-*' ! -path './speculators-0.9/*' -printf '%s %P\n' \
        | LC_ALL=C sort -k1,1nr -k2,2) | awk -v limit="$PART_BYTES" '
        { for (i = 1; i <= n && used[i] + $1 > limit; i++); if (i > n) n = i; used[i] += $1; print "wheels-" i, $2 }' \
        | while read -r folder f; do
            mkdir -p "$STACK/$folder/$(dirname "$f")"; cp "$STACK/dl/$f" "$STACK/$folder/$f"; done
    # The 0.9 trainer's target does not fit beside the small wheels in one call: a chunk of its own.
    [[ -d "$STACK/dl/speculators-0.9" ]] && cp "$STACK"/dl/speculators-0.9/*.whl "$STACK/trainer-0.9/"
    local wheel; wheel="$(cd "$STACK/dl" && ls vllm-*.whl)"
    local n=0
    split -b "$PART_BYTES" -d -a 1 "$STACK/dl/$wheel" "$STACK/part."
    for part in "$STACK"/part.*; do
        n=$((n + 1)); mkdir -p "$STACK/vllm-$n"; mv "$part" "$STACK/vllm-$n/$wheel.${part##*.}"
    done
    (cd "$STACK" && find wheels-* vllm-* trainer-0.9 -type f | LC_ALL=C sort | xargs sha256sum) > "$CHUNKS"
    local chunk failed=0
    for chunk in "$STACK"/wheels-* "$STACK"/vllm-* "$STACK/trainer-0.9"; do
        cmd_fits "$chunk" || failed=1
    done
    ((failed == 0)) || { echo "chunks: a chunk does not fit one call: lower GPU_STACK_PART_BYTES" >&2; return 1; }
    echo "carry, one call each: $(for chunk in "$STACK"/wheels-* "$STACK"/vllm-*; do printf '.gpu-stack/%s ' "${chunk##*/}"; done)(and .gpu-stack/trainer-0.9 with the server-0.9 call)"
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
    for dir in "$STACK"/wheels-* "$STACK"/vllm-* "$STACK"/overlay-* "$STACK"/trainer-*; do
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
        grep ' trainer-0.9/' "$CHUNKS" | sha256sum --quiet -c -
        mkdir -p dl/speculators-0.9 && cp trainer-0.9/*.whl dl/speculators-0.9/
        (cd dl && grep ' speculators-0.9/' "$LOCK" | sha256sum --quiet -c -)
        python3 -m pip install "${INSTALL_ARGS[@]}" --upgrade --target "$GPU_STACK_HOME/speculators-0.9" dl/speculators-0.9/*.whl
        echo "installed speculators 0.9's trainer target into $GPU_STACK_HOME/speculators-0.9"
        return
    fi
    if [[ "$what" == small ]]; then
        grep ' wheels-[0-9]*/' "$CHUNKS" | sha256sum --quiet -c -
        for dir in wheels-*; do cp -r "$dir"/. dl/; done
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
    grep ' vllm-' "$CHUNKS" | sha256sum --quiet -c -
    local wheel; wheel="$(cd vllm-1 && ls | sed 's/\.[0-9]$//')"
    # Parts in order: vllm-1 holds .0, vllm-2 holds .1, ...
    : > "dl/$wheel"
    for dir in $(ls -d vllm-* | sort -t- -k2 -n); do cat "$dir"/"$wheel".* >> "dl/$wheel"; done
    (cd dl && grep " $wheel\$" "$LOCK" | sha256sum -c -)
    python3 -m pip install "${INSTALL_ARGS[@]}" --target "$GPU_STACK_SITE" "dl/$wheel"
    echo "installed $wheel into $GPU_STACK_SITE"
}

case "${1:-}" in
    download|update|lock|check|chunks|fits|dryrun|stash|install) cmd="cmd_$1"; shift; "$cmd" "$@" ;;
    *) sed -n '2,18p' "$0"; exit 2 ;;
esac
