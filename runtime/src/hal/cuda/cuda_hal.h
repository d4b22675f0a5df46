//===- cuda_hal.h - the HAL on the CUDA driver API -------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Every driver call is checked; a failure names the call and the CUDA error.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_HAL_CUDA_CUDA_HAL_H
#define TXRT_HAL_CUDA_CUDA_HAL_H

#include "core/launch_env.h"
#include "hal/cuda/dynamic_symbols.h"
#include "hal/hal.h"

namespace txrt::cuda {

/// Opens device |ordinal| on its primary context. TXRT_UNAVAILABLE when no
/// driver or no GPU is present, with the reason.
Status createCudaDevice(int ordinal, std::unique_ptr<hal::Device> &out);

/// An error Status for a failed driver call: "|call| failed: NAME (text)".
Status driverFailure(const DriverSymbols &driver, const char *call, CUresult result);

/// The CUstream behind a CUDA HAL stream (for cuBLASLt).
CUstream streamHandle(hal::Stream &stream);

/// The cuBLASLt implementation of hal::Blas (cuda_blas.cpp); |device|
/// allocates its workspace.
Status createCudaBlas(hal::Device &device, std::unique_ptr<hal::Blas> &out);

/// The cuDNN implementation of hal::Attention (cudnn_attention.cpp): cuDNN's
/// fused SDPA through its C++ frontend, libcudnn.so.9 dlopened.
Status createCudnnAttention(hal::Device &device, std::unique_ptr<hal::Attention> &out);

/// The NCCL implementation of hal::Communicator (nccl_communicator.cpp):
/// libnccl.so.2 dlopened (TXRT_UNAVAILABLE "NCCL (libnccl.so.2) not
/// found: ..." without it). Makes |device| current, lets rank 0 create the
/// ncclUniqueId and share it through exchangeRendezvousBlob
/// (core/rendezvous.h), then creates a non-blocking communicator and polls
/// it until it is ready. The rendezvous and the init each get
/// |timeoutSeconds|; so does each later call's wait to be enqueued. A rank
/// that does not show up ends the init with a message, never a hang.
Status createNcclCommunicator(hal::Device &device, const LaunchEnvironment &env,
                              double timeoutSeconds,
                              std::unique_ptr<hal::Communicator> &out);

} // namespace txrt::cuda

#endif // TXRT_HAL_CUDA_CUDA_HAL_H
