# SPDX-License-Identifier: Apache-2.0
# lit configuration for txopt's regression tests.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TXOPT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test", ".c"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.txopt_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%txopt_src", config.txopt_src_root))
config.substitutions.append(("%txopt_libs", config.txopt_lib_dir))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

tool_dirs = [config.txopt_tools_dir, config.llvm_tools_dir]
tools = ["txopt", "txopt-opt", "txopt-run", "txopt-capi-test",
         "txopt-float-formats-test", "txopt-fp8-convert-test",
         "txopt-fp8-scale-property-test", "txopt-fold-execute-test",
         "txopt-collectives-test", "txopt-dataflow-check-test", "mlir-opt"]
# A sanitizer build (cmake -DTXOPT_ENABLE_SANITIZERS=ON, see
# scripts/test_sanitizers.sh): our own executables carry the ASan runtime,
# but stock mlir-opt-22 does not, and loading the instrumented
# libTxoptPlugin.so into it fails ("ASan runtime does not come first") unless
# the runtime is preloaded. Only mlir-opt gets LD_PRELOAD: never python or
# ptxas, which must run as they are.
asan_runtime = getattr(config, "txopt_asan_runtime", "")
if asan_runtime:
    config.available_features.add("asan")
    tools.remove("mlir-opt")
    mlir_opt = os.path.join(config.llvm_tools_dir, "mlir-opt")
    llvm_config.add_tool_substitutions(
        [ToolSubst("mlir-opt", command="env LD_PRELOAD=%s %s" % (asan_runtime, mlir_opt))])
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.add_tool_substitutions(["txrun", "txrt-info", "txrt-fp8-attention-probe"],
                                   [config.txrt_tools_dir])
# GPU tests say `REQUIRES: cuda-gpu` (skipped, visibly, on machines without
# one); tests of the no-GPU path say `UNSUPPORTED: cuda-gpu`.
import subprocess
try:
    if subprocess.run([os.path.join(config.txrt_tools_dir, "txrt-info")],
                      capture_output=True, timeout=60).returncode == 0:
        config.available_features.add("cuda-gpu")
except (OSError, subprocess.TimeoutExpired):
    pass
# The GPU backend compiles with the CUDA toolkit's libdevice (kernel math)
# and validates/assembles its PTX with ptxas; tests that compile a step.txa
# say `REQUIRES: cuda-toolkit`.
cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
if os.path.exists(os.path.join(cuda_home, "nvvm/libdevice/libdevice.10.bc")):
    config.available_features.add("cuda-toolkit")
    config.environment["CUDA_HOME"] = cuda_home
if os.path.exists(os.path.join(cuda_home, "bin/ptxas")):
    config.available_features.add("ptxas")
    # For tests that read ptxas's resource report (registers, spills).
    config.substitutions.append(("%ptxas", os.path.join(cuda_home, "bin/ptxas")))
# `not` and `count` at the start of a RUN line run from PATH (lit substitutes
# them only after a pipe).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# test/Reference/onnxruntime.test compares txopt-run with onnxruntime when the
# Python packages are there (pip install onnx onnxruntime numpy).
import importlib.util
import sys
# The project's own test commands (scripts/test.sh, ninja check-txopt) pass
# --param txopt_require_python_deps=1: there a missing package means a broken
# setup, and the run fails instead of quietly skipping the numerics tests.
# A plain `lit build/test` under another Python still skips them.
if lit_config.params.get("txopt_require_python_deps", "0") not in ("", "0", "false"):
    missing = [m for m in ("numpy", "onnx", "onnxruntime", "matplotlib")
               if importlib.util.find_spec(m) is None]
    if missing:
        lit_config.fatal(
            "the test Python (%s) lacks %s: run scripts/setup.sh, which "
            "creates .venv with them, and run lit with .venv/bin/python"
            % (sys.executable, ", ".join(missing)))
if all(importlib.util.find_spec(m) for m in ("onnx", "onnxruntime", "numpy")):
    config.available_features.add("onnxruntime")
if importlib.util.find_spec("numpy"):
    config.available_features.add("numpy")
if importlib.util.find_spec("matplotlib"):
    config.available_features.add("matplotlib")
