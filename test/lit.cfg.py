# -*- Python -*-
# lit configuration for SOAP's FileCheck tests.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "SOAP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.soap_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit",
                   "install", "Inputs"]

config.substitutions.append(("%realmodels", config.realmodels_dir))
config.substitutions.append(("%soap_src", config.soap_src_root))
config.substitutions.append(("%soap_tools", config.soap_tools_dir))

llvm_config.with_system_environment(["HOME", "TMPDIR", "PATH", "ASAN_OPTIONS",
                                     "UBSAN_OPTIONS"])
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# scripts/sanitize.sh builds soap-opt and soap-zoo alone and runs the tests
# that use no other tool (SOAP_LIT_TOOLS=soap-opt,soap-zoo): the others are
# then left unresolved instead of stopping lit.
built = os.environ.get("SOAP_LIT_TOOLS")
if os.environ.get("SOAP_LIT_SANITIZED"):
    config.available_features.add("sanitizers")
tools = [
    ToolSubst(name, unresolved="fatal"
              if not built or name in built.split(",") else "ignore")
    for name in ["soap-opt", "soap-translate", "soap-zoo", "soap-profile",
                 "soap-gradcheck", "soap-host-probe"]
]
llvm_config.add_tool_substitutions(tools, [config.soap_tools_dir])

if os.path.isdir(config.realmodels_dir):
    config.available_features.add("realmodels")

# MPI tests (REQUIRES: mpi) run `%mpirun -np N ...`: oversubscribed, so
# that more ranks than cores work, allowed as root (containers), and killed
# after 5 minutes so that a hung rank fails the test instead of the run.
mpirun = shutil.which("mpirun")
if mpirun:
    config.available_features.add("mpi")
    mpirun_flags = " --oversubscribe"
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        mpirun_flags += " --allow-run-as-root"
    timeout = shutil.which("timeout")
    prefix = timeout + " --kill-after=10 300 " if timeout else ""
    config.substitutions.append(("%mpirun", prefix + mpirun + mpirun_flags))

# GPU lowering tests (REQUIRES: cuda-toolkit) need the CUDA toolkit at
# compile time: libdevice for math functions in kernels, and ptxas (%ptxas)
# to check that the generated PTX assembles. No GPU is needed.
cuda_root = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
ptxas = shutil.which("ptxas") or os.path.join(cuda_root, "bin", "ptxas")
libdevice = os.path.join(cuda_root, "nvvm", "libdevice", "libdevice.10.bc")
if os.access(ptxas, os.X_OK) and os.path.isfile(libdevice):
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(("%ptxas", ptxas))

# GPU: "soap-gpu-runtime" when SOAP was built with libsoaprt_gpu (CUDA,
# cuDNN, NCCL found), "cuda-gpu" when, in addition, nvidia-smi lists a GPU
# here (GPU-only tests say REQUIRES: cuda-gpu). %gpu_pipeline lowers
# upstream gpu/func ops to LLVM with PTX kernels (JIT-compiled by the
# driver at run time, so any NVIDIA GPU runs them and ptxas is not needed).
if config.soap_have_cuda.upper() in ("ON", "TRUE", "1", "YES"):
    config.available_features.add("soap-gpu-runtime")
    nvidia_smi = shutil.which("nvidia-smi")
    if nvidia_smi:
        import subprocess
        try:
            listing = subprocess.run([nvidia_smi, "-L"], capture_output=True,
                                     text=True, timeout=60)
            if listing.returncode == 0 and "GPU " in listing.stdout:
                config.available_features.add("cuda-gpu")
        except (OSError, subprocess.SubprocessError):
            pass
config.substitutions.append(
    ("%gpu_pipeline",
     "--gpu-lower-to-nvvm-pipeline=\"cubin-chip=sm_75 cubin-features=+ptx70 "
     "cubin-format=isa\""))
