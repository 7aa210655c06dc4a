#!/usr/bin/env bash
# Compares the device's results (DIR, default the latest unpacked) with the
# CPU runs here, as gpu-zoo.test does (compare_runs.py 1e-4, SOAP_DNNL=0 run
# as the second reference); exports' large checkpoints compared on the same
# strided subsets (shrink_ckpt.py 32768).   bash compare.sh DIR
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
G=${GPU_CHECK_DIR:-/tmp/gpucheck}; W=$G/work; D=${1:?the folder of the device results, unpacked}
C=$ROOT/test/Passes/partition/Inputs/compare_runs.py
SHRINK=$ROOT/bench/gpu-check/shrink_ckpt.py
cmp1() { # reference-model gpu-name
  local ref=$1 name=$2 a=$W/$1.cpu.ckpt b=$D/$2.ckpt c=$W/$1.cpu.im2col.ckpt
  [ -f $D/$name.out ] || { echo "$name: NOT RUN"; return; }
  if [ -f $D/$name.small.ckpt ]; then
    b=$D/$name.small.ckpt
    python3 $SHRINK $a $G/cmp.$ref.a.ckpt 32768; a=$G/cmp.$ref.a.ckpt
    python3 $SHRINK $c $G/cmp.$ref.c.ckpt 32768; c=$G/cmp.$ref.c.ckpt
  fi
  [ -f $b ] || { echo "$name: no checkpoint ($(head -c 300 $D/$name.err))"; return; }
  echo "$name: $(python3 $C 1e-4 $W/$ref.cpu.out $a $D/$name.out $b $W/$ref.cpu.im2col.out $c 2>&1 | tr '\n' ' ')"
}
for m in mlp alexnet vgg16 resnet inception rnntc rnnlm nmt bert gpt2 lenet squeezenet1_1 mobilenet_v3_small resnet18 bert_hf; do cmp1 $m $m.gpu; done
for n in $(cat $W/partitioned.list) mlp.nccl; do cmp1 ${n%%.*} $n; done
