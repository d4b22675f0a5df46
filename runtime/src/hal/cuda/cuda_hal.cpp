//===- cuda_hal.cpp - the HAL on the CUDA driver API ----------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// One primary context per device, retained for the device's lifetime. The
// runtime uses one blocking stream (flag CU_STREAM_DEFAULT), so its work is
// ordered after the synchronous host copies the driver runs on the legacy
// stream: a pageable cuMemcpyHtoD may return before its DMA lands, and the
// implicit legacy-stream ordering is what makes the next kernel see it.
//
//===----------------------------------------------------------------------===//

#include "hal/cuda/cuda_hal.h"

#include <cstring>
#include <vector>

namespace txrt::cuda {

Status driverFailure(const DriverSymbols &driver, const char *call, CUresult result) {
  return Status::internal(std::string(call) + " failed: " + describe(driver, result));
}

namespace {

#define TXRT_CU(call, ...)                                                     \
  do {                                                                         \
    CUresult txrt_result_ = driver_.call(__VA_ARGS__);                         \
    if (txrt_result_ != CUDA_SUCCESS)                                          \
      return driverFailure(driver_, #call, txrt_result_);                      \
  } while (0)

class CudaBuffer final : public hal::Buffer {
public:
  CudaBuffer(const DriverSymbols &driver, CUdeviceptr ptr, size_t size)
      : driver_(driver), ptr_(ptr), size_(size) {}
  ~CudaBuffer() override { driver_.cuMemFree(ptr_); }
  hal::DevicePtr address() const override { return ptr_; }
  size_t size() const override { return size_; }

private:
  const DriverSymbols &driver_;
  CUdeviceptr ptr_;
  size_t size_;
};

class CudaEvent final : public hal::Event {
public:
  CudaEvent(const DriverSymbols &driver, CUevent event) : driver_(driver), event_(event) {}
  ~CudaEvent() override { driver_.cuEventDestroy(event_); }
  CUevent handle() const { return event_; }

private:
  const DriverSymbols &driver_;
  CUevent event_;
};

class CudaKernel final : public hal::Kernel {
public:
  CudaKernel(const DriverSymbols &driver, CUfunction function, std::string name)
      : driver_(driver), function_(function), name_(std::move(name)) {}
  const std::string &name() const override { return name_; }
  Status allowSharedMemory(uint32_t bytes) override {
    if (bytes <= 48 * 1024)
      return Status();
    TXRT_CU(cuFuncSetAttribute, function_,
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes));
    return Status();
  }
  CUfunction handle() const { return function_; }

private:
  const DriverSymbols &driver_;
  CUfunction function_;
  std::string name_;
};

class CudaModule final : public hal::Module {
public:
  CudaModule(const DriverSymbols &driver, CUmodule module)
      : driver_(driver), module_(module) {}
  ~CudaModule() override { driver_.cuModuleUnload(module_); }
  Status getKernel(const std::string &name, std::unique_ptr<hal::Kernel> &out) override {
    CUfunction function = nullptr;
    CUresult r = driver_.cuModuleGetFunction(&function, module_, name.c_str());
    if (r != CUDA_SUCCESS)
      return driverFailure(driver_, "cuModuleGetFunction", r)
          .withContext("kernel '" + name + "'");
    out = std::make_unique<CudaKernel>(driver_, function, name);
    return Status();
  }

private:
  const DriverSymbols &driver_;
  CUmodule module_;
};

class CudaGraph final : public hal::Graph {
public:
  CudaGraph(const DriverSymbols &driver, CUgraph graph, CUgraphExec exec)
      : driver_(driver), graph_(graph), exec_(exec) {}
  ~CudaGraph() override {
    driver_.cuGraphExecDestroy(exec_);
    driver_.cuGraphDestroy(graph_);
  }
  Status launch(hal::Stream &stream) override {
    TXRT_CU(cuGraphLaunch, exec_, streamHandle(stream));
    return Status();
  }

private:
  const DriverSymbols &driver_;
  CUgraph graph_;
  CUgraphExec exec_;
};

class CudaStream final : public hal::Stream {
public:
  CudaStream(const DriverSymbols &driver, CUstream stream)
      : driver_(driver), stream_(stream) {}
  ~CudaStream() override { driver_.cuStreamDestroy(stream_); }
  CUstream handle() const { return stream_; }

  Status memset32(hal::DevicePtr dst, uint32_t value, size_t count) override {
    TXRT_CU(cuMemsetD32Async, dst, value, count, stream_);
    return Status();
  }
  Status copyDeviceToDevice(hal::DevicePtr dst, hal::DevicePtr src,
                            size_t bytes) override {
    TXRT_CU(cuMemcpyDtoDAsync, dst, src, bytes, stream_);
    return Status();
  }
  Status copyHostToDevice(hal::DevicePtr dst, const void *src, size_t bytes) override {
    TXRT_CU(cuMemcpyHtoD, dst, src, bytes);
    return Status();
  }
  Status copyDeviceToHost(void *dst, hal::DevicePtr src, size_t bytes) override {
    TXRT_RETURN_IF_ERROR(synchronize());
    TXRT_CU(cuMemcpyDtoH, dst, src, bytes);
    return Status();
  }
  Status launch(hal::Kernel &kernel, const uint32_t grid[3], const uint32_t block[3],
                uint32_t sharedBytes, void **params) override {
    auto &k = static_cast<CudaKernel &>(kernel);
    TXRT_CU(cuLaunchKernel, k.handle(), grid[0], grid[1], grid[2], block[0],
            block[1], block[2], sharedBytes, stream_, params, nullptr);
    return Status();
  }
  Status synchronize() override {
    TXRT_CU(cuStreamSynchronize, stream_);
    return Status();
  }
  Status query(bool &done) override {
    CUresult result = driver_.cuStreamQuery(stream_);
    done = result != CUDA_ERROR_NOT_READY;
    if (done && result != CUDA_SUCCESS)
      return driverFailure(driver_, "cuStreamQuery", result);
    return Status();
  }
  Status record(hal::Event &event) override {
    TXRT_CU(cuEventRecord, static_cast<CudaEvent &>(event).handle(), stream_);
    return Status();
  }
  Status wait(hal::Event &event) override {
    TXRT_CU(cuStreamWaitEvent, stream_, static_cast<CudaEvent &>(event).handle(), 0);
    return Status();
  }
  Status beginCapture() override {
    // Thread-local: other threads' unrelated CUDA calls do not break it.
    TXRT_CU(cuStreamBeginCapture, stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    return Status();
  }
  Status endCapture(std::unique_ptr<hal::Graph> &out) override {
    CUgraph graph = nullptr;
    TXRT_CU(cuStreamEndCapture, stream_, &graph);
    CUgraphExec exec = nullptr;
    CUresult r = driver_.cuGraphInstantiateWithFlags(&exec, graph, 0);
    if (r != CUDA_SUCCESS) {
      driver_.cuGraphDestroy(graph);
      return driverFailure(driver_, "cuGraphInstantiateWithFlags", r);
    }
    out = std::make_unique<CudaGraph>(driver_, graph, exec);
    return Status();
  }

private:
  const DriverSymbols &driver_;
  CUstream stream_;
};

class CudaDevice final : public hal::Device {
public:
  CudaDevice(const DriverSymbols &driver, CUdevice device, CUcontext context,
             hal::DeviceInfo info)
      : driver_(driver), device_(device), context_(context), info_(std::move(info)) {}
  ~CudaDevice() override { driver_.cuDevicePrimaryCtxRelease(device_); }

  const hal::DeviceInfo &info() const override { return info_; }
  Status makeCurrent() override {
    TXRT_CU(cuCtxSetCurrent, context_);
    return Status();
  }
  Status allocate(size_t bytes, std::unique_ptr<hal::Buffer> &out) override {
    CUdeviceptr ptr = 0;
    CUresult r = driver_.cuMemAlloc(&ptr, bytes ? bytes : 1);
    if (r != CUDA_SUCCESS)
      return driverFailure(driver_, "cuMemAlloc", r)
          .withContext("allocating " + std::to_string(bytes) + " bytes");
    out = std::make_unique<CudaBuffer>(driver_, ptr, bytes);
    return Status();
  }
  Status createStream(std::unique_ptr<hal::Stream> &out) override {
    CUstream stream = nullptr;
    TXRT_CU(cuStreamCreate, &stream, CU_STREAM_DEFAULT);
    out = std::make_unique<CudaStream>(driver_, stream);
    return Status();
  }
  Status createEvent(std::unique_ptr<hal::Event> &out) override {
    CUevent event = nullptr;
    TXRT_CU(cuEventCreate, &event, CU_EVENT_DEFAULT);
    out = std::make_unique<CudaEvent>(driver_, event);
    return Status();
  }
  Status elapsedMs(hal::Event &start, hal::Event &end, float &ms) override {
    TXRT_CU(cuEventElapsedTime, &ms, static_cast<CudaEvent &>(start).handle(),
            static_cast<CudaEvent &>(end).handle());
    return Status();
  }
  Status loadModule(fb::ImageFormat format, const void *data, size_t size,
                    std::unique_ptr<hal::Module> &out) override {
    // PTX must be NUL-terminated text; copy it when the artifact left the
    // terminator out rather than let the driver read past the end.
    std::vector<char> text;
    if (format == fb::ImageFormat::PTX &&
        (size == 0 || static_cast<const char *>(data)[size - 1] != '\0')) {
      text.assign(static_cast<const char *>(data), static_cast<const char *>(data) + size);
      text.push_back('\0');
      data = text.data();
    }
    CUmodule module = nullptr;
    TXRT_CU(cuModuleLoadDataEx, &module, data, 0, nullptr, nullptr);
    out = std::make_unique<CudaModule>(driver_, module);
    return Status();
  }
  Status createBlas(std::unique_ptr<hal::Blas> &out) override {
    return createCudaBlas(*this, out);
  }
  Status createAttention(std::unique_ptr<hal::Attention> &out) override {
    return createCudnnAttention(*this, out);
  }
  Status memoryInfo(size_t &freeBytes, size_t &totalBytes) override {
    TXRT_CU(cuMemGetInfo, &freeBytes, &totalBytes);
    return Status();
  }
  Status synchronize() override {
    TXRT_CU(cuCtxSynchronize);
    return Status();
  }

private:
  const DriverSymbols &driver_;
  CUdevice device_;
  CUcontext context_;
  hal::DeviceInfo info_;
};

} // namespace

CUstream streamHandle(hal::Stream &stream) {
  return static_cast<CudaStream &>(stream).handle();
}

Status createCudaDevice(int ordinal, std::unique_ptr<hal::Device> &out) {
  std::string error;
  const DriverSymbols *driver = loadDriver(error);
  if (!driver)
    return Status::unavailable(error);
  int count = 0;
  if (CUresult r = driver->cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return driverFailure(*driver, "cuDeviceGetCount", r);
  if (count == 0)
    return Status::unavailable("the CUDA driver reports no devices");
  if (ordinal < 0 || ordinal >= count)
    return Status::outOfRange("device " + std::to_string(ordinal) +
                              " does not exist (this machine has " +
                              std::to_string(count) + " CUDA devices)");
  CUdevice device = 0;
  if (CUresult r = driver->cuDeviceGet(&device, ordinal); r != CUDA_SUCCESS)
    return driverFailure(*driver, "cuDeviceGet", r);
  hal::DeviceInfo info;
  char name[256] = {};
  if (CUresult r = driver->cuDeviceGetName(name, sizeof(name) - 1, device);
      r != CUDA_SUCCESS)
    return driverFailure(*driver, "cuDeviceGetName", r);
  info.name = name;
  struct {
    int attribute;
    int *value;
  } attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.ccMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.ccMinor},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       &info.maxSharedPerBlockOptin},
  };
  for (auto &a : attributes)
    if (CUresult r = driver->cuDeviceGetAttribute(a.value, a.attribute, device);
        r != CUDA_SUCCESS)
      return driverFailure(*driver, "cuDeviceGetAttribute", r);
  if (CUresult r = driver->cuDeviceTotalMem(&info.totalMemory, device);
      r != CUDA_SUCCESS)
    return driverFailure(*driver, "cuDeviceTotalMem", r);
  CUcontext context = nullptr;
  if (CUresult r = driver->cuDevicePrimaryCtxRetain(&context, device);
      r != CUDA_SUCCESS)
    return driverFailure(*driver, "cuDevicePrimaryCtxRetain", r);
  auto cudaDevice = std::make_unique<CudaDevice>(*driver, device, context, std::move(info));
  TXRT_RETURN_IF_ERROR(cudaDevice->makeCurrent());
  out = std::move(cudaDevice);
  return Status();
}

} // namespace txrt::cuda
