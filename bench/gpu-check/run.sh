#!/usr/bin/env bash
# Device side of the GPU check: unpacks libs.tar.xz and exes.tar.xz to
# /tmp/gc, finds CUDA/cuBLAS/cuDNN/NCCL of the image, runs every GPU
# executable for 3 steps (single GPU, then MPI ranks sharing the GPU, then
# one NCCL rank) and packs outputs into $OUT/results.tar.NN (parts of at
# most 15 MiB: the device tool brings back files of up to 16 MiB).
#   bash .gpucheck/run.sh        (OUT must be set)
set -u
H=$(cd "$(dirname "$0")" && pwd)
T=/tmp/gc; R=$T/res; rm -rf $T; mkdir -p $T/exe $R
START=$(date +%s)
OUT=${OUT:-$T/out}; mkdir -p $OUT
exec > >(tee $OUT/log.txt) 2>&1
tar -C $T -xJf $H/libs.tar.xz && tar -C $T/exe -xJf $H/exes.tar.xz || { echo "unpack failed"; exit 1; }
echo "== nvidia-smi"; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
# CUDA libraries of the image (pip nvidia-* packages, /usr/local/cuda*).
PY=$(command -v python3 || echo /opt/torch/.venv/bin/python3)
NV=$($PY -c "import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))" 2>/dev/null)
echo "nvidia packages: $NV"
dirs=""
for l in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnccl.so.2 libnvrtc.so.13 libnvJitLink.so.13; do
  f=$(find /usr/local/cuda*/lib64/ /usr/local/cuda*/lib/ /usr/local/cuda*/targets/*/lib/ ${NV:+$NV/nvidia} -name "$l" 2>/dev/null | head -1)
  [ -n "$f" ] || f=$(find / -xdev -name "$l" 2>/dev/null | head -1)
  echo "$l -> ${f:-NOT FOUND}"
  [ -z "$f" ] || case ":$dirs:" in *":$(dirname $f):"*) ;; *) dirs="$dirs:$(dirname $f)" ;; esac
done
LDP="$T/lib$dirs"
SYS_STDCXX=$(ldconfig -p | awk '/libstdc\+\+.so.6 .*x86-64/ {print $NF; exit}')
if [ -z "$SYS_STDCXX" ] || ! grep -aq GLIBCXX_3.4.30 "$SYS_STDCXX"; then LDP="$LDP:$T/compat"; echo "using carried libstdc++"; fi
export LD_LIBRARY_PATH="$LDP${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
echo "== ldd mlp.gpu"; ldd $T/exe/mlp.gpu | grep -v "^\s*/lib64\|linux-vdso"
# Open MPI 4.1.4 (Debian), relocated.
export OPAL_PREFIX=$T/ompi/usr PMIX_INSTALL_PREFIX=$T/pmix2 PATH=$T/ompi/usr/bin:$PATH
export OMPI_MCA_orte_default_hostfile=$T/ompi/etc/openmpi-default-hostfile
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mtl='^ofi,psm,psm2' OMPI_MCA_osc='^ucx,pt2pt'
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_btl_base_warn_component_unused=0
export PMIX_MCA_mca_base_component_path=$T/pmix2/lib/pmix PMIX_MCA_gds=hash OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none"
pack() { rm -f $OUT/results.tar.*; tar -C $R -cf - . | split -b 15M -d - $OUT/results.tar. ; }
one() { # name [ranks] [env...]
  local name=$1 ranks=${2:-}; shift 2 2>/dev/null || shift
  [ -x $T/exe/$name ] || { echo "MISSING $name"; return; }
  local now=$(( $(date +%s) - START ))
  if [ $now -gt ${DEADLINE:-330} ]; then echo "SKIP $name (deadline, ${now}s)"; return; fi
  local t0=$(date +%s) launch=""
  [ -z "$ranks" ] || launch="$MPIRUN -np $ranks"
  local steps=3
  case $name in inception.*) steps=2 ;; esac
  env "$@" timeout 120 $launch $T/exe/$name --steps $steps --save $R/$name.ckpt > $R/$name.out 2> $R/$name.err
  local rc=$?
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s $(grep -o '^step=[0-9]* loss=[^ ]*' $R/$name.out | sed 's/step=[0-9]* loss=//' | tr '\n' ' ')"
  [ $rc -eq 0 ] || tail -5 $R/$name.err | sed 's/^/    /'
  # Large checkpoints come back shrunk (shrink_ckpt.py, same on the CPU side).
  if [ -f $R/$name.ckpt ] && [ $(stat -c %s $R/$name.ckpt) -gt 2000000 ]; then
    $PY $H/shrink_ckpt.py $R/$name.ckpt $R/$name.small.ckpt 32768 && rm $R/$name.ckpt
  fi
  pack
}
echo "== single GPU"
for m in mlp alexnet vgg16 resnet inception rnntc rnnlm nmt bert gpt2 lenet squeezenet1_1 mobilenet_v3_small resnet18 bert_hf; do
  [ -x $T/exe/$m.gpu ] && one $m.gpu || echo "MISSING $m.gpu"
done
echo "== MPI ranks sharing the GPU (SOAP_GPU_COMM=mpi)"
if timeout 30 $MPIRUN -np 2 hostname > $R/mpirun-check.log 2>&1; then
  echo "mpirun -np 2 hostname: ok"
  for n in $(cat $T/exe/partitioned.list); do
    one $n ${n##*.} SOAP_GPU_COMM=mpi
  done
  echo "== one rank through NCCL"
  one mlp.nccl 1 SOAP_GPU_COMM=nccl
else
  echo "mpirun does not work (rc=$?):"; head -20 $R/mpirun-check.log | sed 's/^/    /'
  echo "== one rank through NCCL, as an MPI singleton"
  one mlp.nccl "" SOAP_GPU_COMM=nccl
fi
pack; ls -la $OUT; echo "total $(( $(date +%s) - START ))s"
