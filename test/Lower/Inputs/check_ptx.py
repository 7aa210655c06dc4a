"""Assembles every kernel that --soap-lower-gpu embedded in a module.

usage: check_ptx.py PTXAS ARCH MODULE.mlir

Reads the PTX of each gpu.binary (format=isa), runs `ptxas -arch=ARCH` on
it, and prints "kernels: N assembled" (or the first failure, exit 1).
"""
import re
import subprocess
import sys
import tempfile

ptxas, arch, path = sys.argv[1:4]
text = open(path).read()
objects = re.findall(r'assembly = "((?:[^"\\]|\\.)*)"', text)
if not objects:
    sys.exit("no gpu.binary with PTX in " + path)
with tempfile.TemporaryDirectory() as work:
    for i, escaped in enumerate(objects):
        ptx = re.sub(r"\\([0-9A-Fa-f]{2})",
                     lambda m: chr(int(m.group(1), 16)), escaped)
        source = f"{work}/k{i}.ptx"
        with open(source, "w") as f:
            f.write(ptx)
        run = subprocess.run([ptxas, f"-arch={arch}", source, "-o",
                              f"{work}/k.cubin"], capture_output=True,
                             text=True)
        if run.returncode:
            sys.exit(f"kernel {i} does not assemble:\n{run.stderr}")
print(f"kernels: {len(objects)} assembled")
