#!/usr/bin/env bash
# One device run for issues 36 and 37 (see tools/measure/finetune_steps.py and
# embedding_bag_kernels.py). bitsandbytes 0.49.2 is built from its release source for sm_90 (the
# machine has no network): `git archive 0.49.2 CMakeLists.txt csrc bitsandbytes` of
# bitsandbytes-foundation/bitsandbytes unpacked in .bnb/, with a dist-info naming its version so
# that transformers and PEFT find it. Results go to $OUT.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/device.txt"
(cmake -S .bnb -B /tmp/bnbb -G Ninja -DCOMPUTE_BACKEND=cuda -DCOMPUTE_CAPABILITY=90 \
   -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/bnbb -j16) > "$OUT/bnb_build.log" 2>&1
echo "bitsandbytes build: $?"; tail -1 "$OUT/bnb_build.log"
export PYTHONUNBUFFERED=1
# nothing else runs while steps are timed (the host's speed is part of a LoRA step)
PYTHONPATH=$PWD/.bnb python3 tools/measure/finetune_steps.py --out "$OUT/finetune_steps.csv"
[ "${1:-}" = --no-embedding ] ||
  python3 tools/measure/embedding_bag_kernels.py --reps 5 --out "$OUT/embedding_bag_kernels.csv"
