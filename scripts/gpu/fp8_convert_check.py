#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the kernel txopt-fp8-convert-kernel wrote (test/Target/CUDA/
FP8ConvertKernel.cpp) over all 2^32 f32 bit patterns on the GPU: each is
encoded to E4M3 and E5M2 by the integer code the executor is checked against
and by the hardware cvt.rn.satfinite path the amax kernels use. Prints the
mismatch counts; exits 0 only when both are 0.

fp8_convert_check.py KERNEL.ptx     (needs libcuda.so.1 and a GPU, sm_89+)"""
import ctypes
import sys


def main():
    ptx = open(sys.argv[1], "rb").read() + b"\0"
    cuda = ctypes.CDLL("libcuda.so.1")

    def check(rc, what):
        if rc != 0:
            sys.exit("fp8_convert_check: %s failed (CUDA error %d)" % (what, rc))

    check(cuda.cuInit(0), "cuInit")
    device = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    context = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    module = ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(ptx)), "cuModuleLoadData")
    kernel = ctypes.c_void_p()
    check(cuda.cuModuleGetFunction(ctypes.byref(kernel), module, b"fp8_encode_compare"),
          "cuModuleGetFunction")
    counts = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(counts), ctypes.c_size_t(16)), "cuMemAlloc")
    check(cuda.cuMemsetD32_v2(counts, ctypes.c_uint(0), ctypes.c_size_t(4)), "cuMemsetD32")
    # 2^32 patterns, 16 per thread, 256 threads per block.
    blocks = (1 << 32) // (16 * 256)
    arg = ctypes.c_uint64(counts.value)
    params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(arg), ctypes.c_void_p))
    check(cuda.cuLaunchKernel(kernel, blocks, 1, 1, 256, 1, 1, 0, None, params, None),
          "cuLaunchKernel")
    check(cuda.cuCtxSynchronize(), "the kernel")
    host = (ctypes.c_uint32 * 4)()
    check(cuda.cuMemcpyDtoH_v2(host, counts, ctypes.c_size_t(16)), "cuMemcpyDtoH")
    ok = True
    for name, index in (("f8E4M3FN", 0), ("f8E5M2", 1)):
        bad = host[index]
        ok &= bad == 0
        print("%s: %d f32 patterns, %d mismatches between cvt.rn.satfinite and the integer "
              "encode%s" % (name, 1 << 32, bad,
                            "" if bad == 0 else " (e.g. 0x%08x)" % host[2 + index]))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
