#!/usr/bin/env bash
# Packs what the device needs into .gpucheck/ of the repository (ignored:
# add /.gpucheck/ to .git/info/exclude):
# exes.tar.xz (the GPU executables), libs.tar.xz (Debian libraries and the
# relocatable Open MPI tree), run.sh and shrink_ckpt.py (from bench/gpu-check).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
G=${GPU_CHECK_DIR:-/tmp/gpucheck}; S=$G/stage; D=$ROOT/.gpucheck
rm -rf $S; mkdir -p $S/lib $S/compat $S/bin
L=/usr/lib/x86_64-linux-gnu
OM=$S/ompi/usr
mkdir -p $OM/bin $OM/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 $OM/share $S/ompi/etc $S/pmix2/lib
cp -L /usr/bin/orterun /usr/bin/orted $OM/bin/; ln -s orterun $OM/bin/mpirun
for p in $L/openmpi/lib/openmpi3/*.so; do
  case $(basename $p) in *ucx*|*ofi*|*openib*|*psm*|*verbs*) continue ;; esac
  cp $p $OM/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/
done
cp -r /usr/share/openmpi $OM/share/
cp /etc/openmpi/* $S/ompi/etc/
cp -r $L/pmix2/share $S/pmix2/; cp -r $L/pmix2/lib/pmix $S/pmix2/lib/
# Libraries: every non-glibc, non-CUDA dependency of the executables, the
# launcher and the kept plugins.
libs=$( { ldd $G/work/*.gpu $G/work/*.[0-9] $OM/bin/* $OM/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so $S/pmix2/lib/pmix/*.so 2>/dev/null || true; } \
  | awk '/=>/ {print $3}' | grep -v "cuda\|not" | sort -u)
for f in $libs; do
  case $(basename $f) in libc.so*|libm.so*|libdl.so*|libpthread*|librt.so*|ld-linux*|libresolv*|libutil*|libgcc_s*) continue ;; libstdc++*) cp -L $f $S/compat/; continue ;; esac
  cp -L $f $S/lib/
done
tar -C $S -cJf $G/libs.tar.xz lib compat ompi pmix2
mkdir -p $D; rm -f $D/*
cp $G/libs.tar.xz $D/
(cd $G/work && tar -cJf $D/exes.tar.xz partitioned.list $(ls *.gpu *.nccl $(cat partitioned.list) 2>/dev/null))
cp $ROOT/bench/gpu-check/run.sh $ROOT/bench/gpu-check/shrink_ckpt.py $D/
du -sh $D; ls -la $D
