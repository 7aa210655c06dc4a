#!/usr/bin/env bash
# Builds every executable of the GPU check (gpu-zoo.test's models and
# partitioned programs, plus the torch-mlir exports at batch 2) with the
# copied tools, and runs the CPU ones here.
#   bash bench/gpu-check/build.sh [model ...]
# (GPU_CHECK_DIR: the work folder, /tmp/gpucheck; BUILD: the build folder.)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
G=${GPU_CHECK_DIR:-/tmp/gpucheck}
BUILD=${BUILD:-$ROOT/build}
# The tools and runtime are copied, so that rebuilding SOAP meanwhile
# changes nothing here.
mkdir -p $G/bin $G/rt
cp $BUILD/bin/soap-zoo $BUILD/bin/soap-opt $BUILD/bin/soap-translate $G/bin/
cp $BUILD/lib/libsoaprt*.a $G/rt/
export PATH=$G/bin:$PATH SOAP_RUNTIME_DIR=$G/rt
W=$G/work; mkdir -p $W; cd $W
REAL=${REALMODELS:-$ROOT/../shared/realmodels}
STEP='--soap-training-step=optimizer=momentum lr=0.05'
declare -A ZOO=(
 [mlp]="mlp --batch 8 --input 16 --hidden 8 --layers 2 --classes 3"
 [alexnet]="alexnet --batch 2 --image 64 --classes 3 --width 2 --hidden 8"
 [vgg16]="vgg16 --batch 2 --image 32 --classes 3 --width 2 --hidden 8"
 [resnet]="resnet50 --depth 18 --batch 2 --image 32 --width 4 --classes 5"
 [inception]="inception_v3 --batch 2 --image 75 --classes 3 --width 2"
 [rnntc]="rnntc --batch 2 --seq 3 --vocab 11 --embed 4 --hidden 4 --layers 2 --classes 3"
 [rnnlm]="rnnlm --batch 4 --seq 3 --vocab 11 --embed 4 --hidden 4 --layers 2"
 [nmt]="nmt --batch 2 --seq 3 --vocab 11 --embed 4 --hidden 4 --layers 2"
 [bert]="bert-base --batch 2 --seq 32 --vocab 50 --hidden 32 --layers 1 --heads 2 --max-pos 32 --classes 3"
 [gpt2]="gpt2 --batch 2 --seq 16 --vocab 50 --hidden 32 --layers 1 --heads 2 --max-pos 16"
)
declare -A PREP=(
 [lenet]='--soap-lift-params --soap-set-batch=2'
 [resnet18]='--soap-lift-params --soap-set-batch=2'
 [squeezenet1_1]='--soap-lift-params --soap-set-batch=2'
 [mobilenet_v3_small]='--soap-lift-params --soap-set-batch=2'
 [bert_hf]='--soap-lift-params=elided-integers=iota --soap-set-batch=2'
)
TRAIN='--soap-training-step=loss=softmax-xent optimizer=sgd lr=0.01'
# As gpu-zoo.test: Inception is compared after 2 steps (batch norm over 2
# samples amplifies rounding beyond the comparison after 3).
steps_of() { case $1 in inception.*) echo 2 ;; *) echo 3 ;; esac; }
log() { echo "[$(date +%T)] $*"; }
build() { # mlir name passes...
  local src=$1 name=$2; shift 2
  if soap-opt $src "$@" 2> $name.opt.err | soap-translate --soap-to-executable -o $name 2> $name.tr.err; then
    log "built $name"; else log "BUILD FAILED $name"; tail -3 $name.opt.err $name.tr.err; fi
}
cpurun() { # name
  local steps=$(steps_of $1)
  ./$1 --steps $steps --save $1.ckpt > $1.out 2> $1.err || log "CPU RUN FAILED $1 rc=$?"
  SOAP_DNNL=0 ./$1 --steps $steps --save $1.im2col.ckpt > $1.im2col.out 2> $1.im2col.err || log "CPU im2col RUN FAILED $1"
  log "ran $1: $(grep -o 'loss=[^ ]*' $1.out | tr '\n' ' ')"
}
# Partitioned programs (model strategy ranks): the baselines, and random
# strategies, which reach the partitioner's rarer layouts (re-splits on
# device subsets, lazy slices, pieces of gradients). Each is compared with
# its model's one-device CPU run; the model must be built before (the
# default order builds "partitioned" last). partitioned.list names them for
# stage.sh, run.sh and compare.sh.
PARTITIONED=("mlp megatron 2" "resnet data-parallel 2" "rnnlm random:3 4"
  "bert megatron 2" "resnet random:2 2" "bert random:1 2" "gpt2 random:2 2"
  "resnet18 random:2 2" "squeezenet1_1 random:1 2")
want=("$@"); [ ${#want[@]} -gt 0 ] || want=(mlp alexnet vgg16 resnet inception rnntc rnnlm nmt bert gpt2 lenet resnet18 squeezenet1_1 mobilenet_v3_small bert_hf partitioned)
for m in "${want[@]}"; do
  if [ -n "${ZOO[$m]:-}" ]; then
    soap-zoo ${ZOO[$m]} | soap-opt "$STEP" -o $m.mlir
    build $m.mlir $m.cpu --soap-lower-cpu; cpurun $m.cpu
    build $m.mlir $m.gpu --soap-lower-gpu
  elif [ -n "${PREP[$m]:-}" ]; then
    eval soap-opt $REAL/$m.mlir ${PREP[$m]} -o $m.prep.mlir
    soap-opt $m.prep.mlir "$TRAIN" -o $m.mlir
    build $m.mlir $m.cpu --soap-lower-cpu; cpurun $m.cpu
    build $m.mlir $m.gpu --soap-lower-gpu
  elif [ $m = partitioned ]; then
    : > partitioned.list
    for spec in "${PARTITIONED[@]}"; do
      set -- $spec
      [ -f $1.mlir ] || { log "SKIPPED $1.$2.$3: $1 not built"; continue; }
      build $1.mlir $1.$2.$3 "--soap-apply-strategy=strategy=$2 devices=$3" --soap-partition --soap-lower-gpu
      echo $1.$2.$3 >> partitioned.list
    done
    build mlp.mlir mlp.nccl "--soap-apply-strategy=strategy=data-parallel devices=1" --soap-partition --soap-lower-gpu
  fi
done
