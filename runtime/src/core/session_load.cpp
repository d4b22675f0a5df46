//===- session_load.cpp - loading an artifact onto a device ---------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Session::load in its steps: the device can run the artifact (target,
// FP8), the kernels (cubins, or PTX through the driver's JIT), the arena
// with its constants and arguments (zeros, splats, inline or external
// weights), and each command's plan (launch parameters, cuBLASLt and cuDNN
// descriptors). Apart from session.cpp, which runs what is loaded.
//
//===----------------------------------------------------------------------===//

#include "core/session.h"

#include "core/dtype.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace txrt {

namespace {

/// Reads |length| bytes at |offset| of |path|, checking the file is long
/// enough.
Status readFileRange(const std::string &path, uint64_t offset, uint64_t length,
                     std::vector<uint8_t> &out) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::invalid("cannot read '" + path + "': " + std::strerror(errno));
  file.seekg(0, std::ios::end);
  uint64_t size = static_cast<uint64_t>(file.tellg());
  if (offset > size || length > size - offset)
    return Status::invalid("'" + path + "' has " + std::to_string(size) +
                           " bytes, but the artifact reads [" +
                           std::to_string(offset) + ", " +
                           std::to_string(offset + length) + ")");
  out.resize(length);
  file.seekg(static_cast<std::streamoff>(offset));
  if (length && !file.read(reinterpret_cast<char *>(out.data()),
                           static_cast<std::streamsize>(length)))
    return Status::invalid("cannot read '" + path + "': I/O error");
  return Status();
}

} // namespace

bool parseSmTarget(const std::string &target, int &major, int &minor) {
  if (target.rfind("sm_", 0) != 0)
    return false;
  size_t end = 3;
  while (end < target.size() && std::isdigit(static_cast<unsigned char>(target[end])))
    ++end;
  std::string digits = target.substr(3, end - 3);
  if (digits.size() < 2 || digits.size() > 3)
    return false;
  major = std::stoi(digits.substr(0, digits.size() - 1));
  minor = digits.back() - '0';
  return true;
}

Status Session::load(const SessionOptions &options) {
  const hal::DeviceInfo &info = device_->info();
  TXRT_RETURN_IF_ERROR(checkCommunicator(options));
  // Collectives through host memory (threads sharing a device) cannot be
  // captured; NCCL's can.
  useGraphs_ = options.useGraphs && !options.syncEachCommand &&
               (!communicator_ || communicator_->capturable());
  syncEach_ = options.syncEachCommand;
  deterministic_ = options.deterministic;
  std::string deviceName = "device " + std::to_string(options.device) + " (" +
                           info.name + ", compute capability " +
                           std::to_string(info.ccMajor) + "." +
                           std::to_string(info.ccMinor) + ")";
  TXRT_RETURN_IF_ERROR(checkDevice(deviceName));

  size_t total = 0;
  TXRT_RETURN_IF_ERROR(device_->memoryInfo(freeBefore_, total));
  minFree_ = freeBefore_;
  TXRT_RETURN_IF_ERROR(device_->createStream(stream_));
  TXRT_RETURN_IF_ERROR(device_->createEvent(start_));
  TXRT_RETURN_IF_ERROR(device_->createEvent(end_));

  // Each phase timed to its end on the device, so the time it queued is
  // counted in it and not in the next (the last one's wait ends the load).
  auto timed = [&](double &seconds, auto &&phase) -> Status {
    auto started = std::chrono::steady_clock::now();
    TXRT_RETURN_IF_ERROR(phase());
    TXRT_RETURN_IF_ERROR(stream_->synchronize().withContext("loading the artifact"));
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return Status();
  };
  TXRT_RETURN_IF_ERROR(timed(loadTimes_.kernels, [&] { return loadKernels(options, deviceName); }));
  TXRT_RETURN_IF_ERROR(timed(loadTimes_.arena, [&] { return allocateArena(); }));
  // Plans before arguments: tuning runs the GEMMs, writing their outputs,
  // which may be argument slots (an accumulated gradient); the arena holds
  // only zeros and constants then, which no GEMM writes.
  bool tune = options.tuneGemms && !options.deterministic;
  TXRT_RETURN_IF_ERROR(timed(loadTimes_.plans, [&] {
    TXRT_RETURN_IF_ERROR(planCommands());
    TXRT_RETURN_IF_ERROR(prepareAsyncCollectives(options));
    return tune ? tuneGemms() : Status();
  }));
  TXRT_RETURN_IF_ERROR(timed(loadTimes_.arguments, [&] {
    TXRT_RETURN_IF_ERROR(initializeArguments(options));
    // FP8 weight caching: the cache's first values from the weights just
    // loaded (a checkpoint restored later overwrites them with its own).
    if (stateInitBegin_ == commands_.size())
      return Status();
    TXRT_RETURN_IF_ERROR(device_->makeCurrent());
    return enqueueCommands(stateInitBegin_, commands_.size(), syncEach_)
        .withContext("the state-init function (FP8 weight cache)");
  }));
  return sampleMemory();
}

/// "2", "2 or 4", "2, 4 or 8".
static std::string listCounts(const std::vector<unsigned> &counts) {
  std::string list;
  for (size_t i = 0; i < counts.size(); ++i)
    list += (i == 0 ? "" : i + 1 == counts.size() ? " or " : ", ") + std::to_string(counts[i]);
  return list;
}

std::string rankCountMismatch(const Artifact &artifact, int size, bool hasCommunicator) {
  unsigned stepRanks = artifact.root().ranks();
  std::vector<unsigned> counts = artifact.rankCounts();
  if (stepRanks == 0 && size > 1)
    return "this step is not data-parallel, but " + std::to_string(size) +
           " ranks were started: compile it with txopt --train --data-parallel=" +
           std::to_string(size);
  // The counts the artifact holds, as txopt was given them.
  std::string flag;
  for (unsigned count : counts)
    flag += (flag.empty() ? "" : ",") + std::to_string(count);
  if (stepRanks > 0 && size == 1 && !hasCommunicator)
    return "this step is data-parallel over " + listCounts(counts) +
           " ranks (txopt --data-parallel=" + flag + "): start " +
           std::to_string(stepRanks) + (stepRanks == 1 ? " process" : " processes") +
           " under a launcher (torchrun-style RANK, WORLD_SIZE, "
           "LOCAL_RANK, MASTER_ADDR, MASTER_PORT, or mpirun), or run them as "
           "threads on one GPU with txrun --ranks " + std::to_string(stepRanks);
  if (stepRanks > 0 && static_cast<unsigned>(size) != stepRanks)
    return "this step is data-parallel over " + listCounts(counts) + " ranks, but " +
           std::to_string(size) + " were started" +
           (counts.size() > 1 ? ""
                              : " (compile it with txopt --train --data-parallel=" +
                                    std::to_string(std::min<unsigned>(stepRanks, size)) + "," +
                                    std::to_string(std::max<unsigned>(stepRanks, size)) +
                                    " for both counts in one artifact)");
  return "";
}

Status Session::checkCommunicator(const SessionOptions &options) {
  const hal::Communicator *comm = options.communicator.get();
  if (std::string mismatch =
          rankCountMismatch(*artifact_, comm ? comm->size() : 1, comm != nullptr);
      !mismatch.empty())
    return Status::invalid(mismatch);
  if (artifact_->root().ranks() == 0)
    return Status(); // a plain step keeps no communicator
  communicator_ = options.communicator;
  rankTimeoutSeconds_ = options.rankTimeoutSeconds;
  return Status();
}

Status Session::checkDevice(const std::string &deviceName) const {
  const fb::Artifact &a = artifact_->root();
  const hal::DeviceInfo &info = device_->info();
  std::string target = str(a.target());
  if (!target.empty()) {
    int major = 0, minor = 0;
    if (!parseSmTarget(target, major, minor))
      return Status::invalid("the artifact's target '" + target +
                             "' is not of the form sm_XY");
    if (info.ccMajor * 10 + info.ccMinor < major * 10 + minor)
      return Status::invalid("the artifact targets " + target + ", but " +
                             deviceName + " is older; recompile for this GPU");
  }
  if (a.needs_fp8() && info.ccMajor * 10 + info.ccMinor < 89)
    return Status::invalid("the artifact uses FP8 GEMMs, which need compute "
                           "capability 8.9 or newer, but " + deviceName +
                           " lacks them; recompile without FP8");
  return Status();
}

Status Session::loadKernels(const SessionOptions &options, const std::string &deviceName) {
  const fb::Artifact &a = artifact_->root();
  const hal::DeviceInfo &info = device_->info();
  std::string target = str(a.target());
  // A cubin runs only on its own architecture (same major version): another
  // GPU (a newer one) takes the PTX the compiler kept, compiled by the
  // driver's JIT at load. Images are loaded only if a kernel uses them.
  int targetMajor = 0, targetMinor = 0;
  parseSmTarget(target, targetMajor, targetMinor);
  bool jit = options.forceJit || (targetMajor != 0 && info.ccMajor != targetMajor);
  size_t numImages = a.images() ? a.images()->size() : 0;
  modules_.resize(numImages);
  auto imageOf = [&](const fb::Kernel *k) -> Status {
    unsigned index = k->image();
    if (jit && k->jit_image() >= 0)
      index = static_cast<unsigned>(k->jit_image());
    else if (jit && a.images()->Get(index)->format() == fb::ImageFormat::CUBIN)
      return Status::invalid("kernel '" + k->name()->str() + "' is a cubin for " + target +
                             ", which " + deviceName +
                             " cannot run, and the artifact keeps no PTX for it; "
                             "recompile with --target for this GPU");
    if (a.images()->Get(index)->format() == fb::ImageFormat::PTX)
      usesJit_ = true;
    if (modules_[index])
      return Status();
    const fb::KernelImage *image = a.images()->Get(index);
    std::unique_ptr<hal::Module> module;
    TXRT_RETURN_IF_ERROR(device_
                             ->loadModule(image->format(), image->data()->data(),
                                          image->data()->size(), module)
                             .withContext("image " + std::to_string(index) + " (" +
                                          (image->format() == fb::ImageFormat::PTX
                                               ? "PTX"
                                               : "cubin") +
                                          ")"));
    modules_[index] = std::move(module);
    return Status();
  };
  size_t numKernels = a.kernels() ? a.kernels()->size() : 0;
  for (size_t i = 0; i < numKernels; ++i) {
    const fb::Kernel *k = a.kernels()->Get(i);
    TXRT_RETURN_IF_ERROR(imageOf(k));
    unsigned index = jit && k->jit_image() >= 0 ? static_cast<unsigned>(k->jit_image())
                                                : k->image();
    std::unique_ptr<hal::Kernel> kernel;
    TXRT_RETURN_IF_ERROR(modules_[index]->getKernel(k->name()->str(), kernel)
                             .withContext("kernel " + std::to_string(i)));
    kernels_.push_back(std::move(kernel));
  }
  return Status();
}

Status Session::allocateArena() {
  const fb::Artifact &a = artifact_->root();
  // One arena for every tensor, rounded up so the whole of it can be
  // zeroed with 32-bit stores.
  uint64_t arenaBytes = (a.arena_bytes() + 255) / 256 * 256;
  TXRT_RETURN_IF_ERROR(device_->allocate(arenaBytes, arena_).withContext("the arena"));
  TXRT_RETURN_IF_ERROR(stream_->memset32(arena_->address(), 0, arenaBytes / 4)
                           .withContext("zeroing the arena"));
  size_t numConstants = a.constants() ? a.constants()->size() : 0;
  for (size_t i = 0; i < numConstants; ++i) {
    const fb::ConstantData *c = a.constants()->Get(i);
    if (!c->data() || c->data()->size() == 0)
      continue;
    TXRT_RETURN_IF_ERROR(stream_
                             ->copyHostToDevice(slotAddress(c->slot()), c->data()->data(),
                                                c->data()->size())
                             .withContext("constant " + std::to_string(i)));
  }
  return Status();
}

Status Session::initializeArguments(const SessionOptions &options) {
  const fb::Artifact &a = artifact_->root();
  size_t numArgs = a.arguments() ? a.arguments()->size() : 0;
  for (size_t i = 0; i < numArgs; ++i)
    TXRT_RETURN_IF_ERROR(initializeArgument(static_cast<unsigned>(i), options));
  return Status();
}

Status Session::planCommands() {
  const fb::Artifact &a = artifact_->root();
  // Per-command plans: GEMM descriptors and algorithms, launch parameters;
  // over the step's commands, then the micro-step's (gradient accumulation),
  // then the evaluation's (validation), then the logits function's.
  if (a.commands())
    for (const fb::Command *c : *a.commands())
      commands_.push_back(c);
  microBegin_ = commands_.size();
  if (a.micro_step() && a.micro_step()->commands())
    for (const fb::Command *c : *a.micro_step()->commands())
      commands_.push_back(c);
  evalBegin_ = commands_.size();
  if (a.eval() && a.eval()->commands())
    for (const fb::Command *c : *a.eval()->commands())
      commands_.push_back(c);
  logitsBegin_ = commands_.size();
  if (a.logits() && a.logits()->commands())
    for (const fb::Command *c : *a.logits()->commands())
      commands_.push_back(c);
  stateInitBegin_ = commands_.size();
  if (a.state_init() && a.state_init()->commands())
    for (const fb::Command *c : *a.state_init()->commands())
      commands_.push_back(c);
  size_t numCommands = commands_.size();
  gemms_.resize(numCommands);
  attentions_.resize(numCommands);
  launches_.resize(numCommands);
  size_t attentionWorkspace = 0;
  for (size_t i = 0; i < numCommands; ++i) {
    const fb::Command *c = commands_[i];
    std::string where = describeCommand(static_cast<unsigned>(i));
    if (const fb::Launch *l = c->op_as_Launch())
      TXRT_RETURN_IF_ERROR(planLaunch(i, l, where));
    else if (const fb::Gemm *g = c->op_as_Gemm())
      TXRT_RETURN_IF_ERROR(planGemm(i, g, where));
    else if (const fb::Attention *at = c->op_as_Attention())
      TXRT_RETURN_IF_ERROR(planAttention(i, at, where, attentionWorkspace));
  }
  if (attention_)
    TXRT_RETURN_IF_ERROR(device_->allocate(attentionWorkspace, attentionWorkspace_)
                             .withContext("the attention workspace"));
  return Status();
}

Status Session::tuneGemms() {
  for (size_t i = 0; i < gemms_.size(); ++i)
    if (gemms_[i])
      TXRT_RETURN_IF_ERROR(blas_->tune(*gemms_[i], *stream_, gemmTuning_)
                               .withContext("tuning " + describeCommand(static_cast<unsigned>(i))));
  return Status();
}

Status Session::planLaunch(size_t i, const fb::Launch *l, const std::string &where) {
  auto plan = std::make_unique<LaunchPlan>();
  size_t n = l->args() ? l->args()->size() : 0;
  plan->addresses.resize(n);
  for (size_t j = 0; j < n; ++j)
    plan->addresses[j] = slotAddress(l->args()->Get(j));
  for (size_t j = 0; j < n; ++j)
    plan->params.push_back(&plan->addresses[j]);
  hal::Kernel &kernel = *kernels_[l->kernel()];
  TXRT_RETURN_IF_ERROR(kernel.allowSharedMemory(l->shared_bytes())
                           .withContext(where + ": kernel '" + kernel.name() +
                                        "' with " +
                                        std::to_string(l->shared_bytes()) +
                                        " bytes of shared memory"));
  launches_[i] = std::move(plan);
  return Status();
}

Status Session::planGemm(size_t i, const fb::Gemm *g, const std::string &where) {
  if (!blas_)
    TXRT_RETURN_IF_ERROR(device_->createBlas(blas_).withContext(where));
  hal::GemmSpec s;
  s.m = g->m(), s.n = g->n(), s.k = g->k(), s.batch = g->batch();
  s.transA = g->trans_a(), s.transB = g->trans_b();
  s.lda = g->lda(), s.ldb = g->ldb(), s.ldd = g->ldd();
  s.strideA = g->stride_a(), s.strideB = g->stride_b(), s.strideD = g->stride_d();
  s.aType = g->a_type(), s.bType = g->b_type(), s.dType = g->d_type();
  s.fastTf32 = g->compute() == fb::ComputeType::F32_FAST_TF32;
  s.alpha = g->alpha(), s.beta = g->beta();
  s.epilogue = g->epilogue();
  s.a = slotAddress(g->a()), s.b = slotAddress(g->b()), s.d = slotAddress(g->d());
  auto optional = [&](int slot) -> hal::DevicePtr {
    return slot >= 0 ? slotAddress(static_cast<unsigned>(slot)) : 0;
  };
  s.bias = optional(g->bias());
  s.aScale = optional(g->a_scale()), s.bScale = optional(g->b_scale());
  s.dScale = optional(g->d_scale()), s.dAmax = optional(g->d_amax());
  s.fastAccum = g->fast_accum();
  s.aux = optional(g->aux());
  s.auxLd = g->aux_ld();
  std::string shape = "gemm m " + std::to_string(s.m) + " n " +
                      std::to_string(s.n) + " k " + std::to_string(s.k) +
                      " batch " + std::to_string(s.batch) + " (" +
                      dtypeName(s.aType) + " x " + dtypeName(s.bType) + " -> " +
                      dtypeName(s.dType) + ")";
  TXRT_RETURN_IF_ERROR(
      blas_->prepare(s, gemms_[i]).withContext(where + ": " + shape));
  return Status();
}

Status Session::planAttention(size_t i, const fb::Attention *at, const std::string &where,
                              size_t &workspace) {
  if (!attention_)
    TXRT_RETURN_IF_ERROR(device_->createAttention(attention_).withContext(where));
  hal::AttentionSpec s = attentionSpec(*at);
  std::string shape =
      std::string(s.backward ? "attention backward" : "attention") + " B " +
      std::to_string(s.q.dims[0]) + " H " + std::to_string(s.q.dims[1]) + "/" +
      std::to_string(s.k.dims[1]) + " Tq " + std::to_string(s.q.dims[2]) +
      " Tk " + std::to_string(s.k.dims[2]) + " D " + std::to_string(s.q.dims[3]) +
      " (" + dtypeName(s.dtype) + (s.fp8 && s.backward ? "/" + std::string(dtypeName(s.gradType)) : "") +
      (s.causal ? ", causal" : "") +
      (s.hasMask ? ", bias" : "") +
      (s.dropout > 0.0f ? ", dropout " + std::to_string(s.dropout) : "") +
      (s.deterministic ? ", deterministic" : "") + ")";
  Status prepared = attention_->prepare(s, attentions_[i]);
  if (!prepared.ok())
    // The library refused this call on this GPU: the step can still run
    // with attention in primitive ops, which only the compiler can make.
    return Status(prepared.code(), where + ": " + shape + ": " + prepared.message() +
                                       " (compile the step with --no-fuse=attention to "
                                       "run attention unfused)");
  workspace = std::max(workspace, attentions_[i]->workspaceBytes());
  return Status();
}

hal::AttentionSpec Session::attentionSpec(const fb::Attention &at) const {
  // Element offsets (format 3, validated): q, k, v, o, mask, grad_o, grad_q,
  // grad_k, grad_v.
  const uint64_t elementBytes = dtypeSize(at.dtype());
  auto bind = [&](const fb::AttentionTensor *t, unsigned which) {
    hal::AttentionTensorSpec spec;
    if (!t)
      return spec;
    int64_t offset = at.offsets() ? at.offsets()->Get(which) : 0;
    spec.ptr = slotAddress(t->slot()) + static_cast<uint64_t>(offset) * elementBytes;
    for (unsigned d = 0; d < 4; ++d) {
      spec.dims[d] = t->dims()->Get(d);
      spec.strides[d] = t->strides()->Get(d);
    }
    return spec;
  };
  hal::AttentionSpec s;
  s.backward = at.backward();
  s.dtype = at.dtype();
  s.scale = at.scale();
  s.causal = at.causal();
  s.window = at.window();
  s.q = bind(at.q(), 0), s.k = bind(at.k(), 1), s.v = bind(at.v(), 2), s.o = bind(at.o(), 3);
  s.lse = slotAddress(at.lse());
  s.hasMask = at.has_mask();
  if (s.hasMask)
    s.mask = bind(at.mask(), 4);
  if (at.dropout_ratio() > 0.0f) { // format 7, validated
    s.dropout = at.dropout_ratio();
    s.dropoutKey = slotAddress(at.dropout_key());
    s.dropoutOffset = slotAddress(at.dropout_offset());
  }
  if (s.backward) {
    s.gradO = bind(at.grad_o(), 5), s.gradQ = bind(at.grad_q(), 6);
    s.gradK = bind(at.grad_k(), 7), s.gradV = bind(at.grad_v(), 8);
    s.deterministic = deterministic_;
  }
  if (at.fp8()) { // format 9, validated: every scalar the direction uses
    s.fp8 = true;
    s.gradType = at.grad_dtype();
    for (unsigned i = 0; i < kAttentionScalarCount; ++i) {
      uint32_t slot = at.fp8_scalars()->Get(i);
      s.fp8Scalars[i] = slot == kNoAttentionScalarSlot ? 0 : slotAddress(slot);
    }
  }
  return s;
}

Status Session::initializeArgument(unsigned index, const SessionOptions &options) {
  const fb::Argument *arg = artifact_->root().arguments()->Get(index);
  std::string where = "argument " + std::to_string(index) + " ('" + str(arg->name()) + "')";
  uint64_t elements = artifact_->argumentElements(index);
  size_t bytes = elements * dtypeSize(arg->dtype());
  std::vector<uint8_t> host;
  switch (arg->init()) {
  case fb::InitKind::ZEROS:
  case fb::InitKind::BATCH:
    // The arena was zeroed; a BATCH argument is written by the driver.
    return Status();
  case fb::InitKind::SPLAT:
    host.resize(bytes);
    for (uint64_t i = 0; i < elements; ++i)
      storeFromDouble(arg->dtype(), host.data(), i, arg->splat());
    break;
  case fb::InitKind::INLINE:
  case fb::InitKind::EXTERNAL: {
    std::vector<uint8_t> source;
    const void *data;
    if (arg->init() == fb::InitKind::INLINE) {
      data = arg->data() ? arg->data()->data() : nullptr;
    } else {
      std::string path = arg->path()->str();
      if (path[0] != '/') {
        std::string base = options.weightsDir;
        if (base.empty() && artifact_->root().weights_dir())
          base = artifact_->root().weights_dir()->str();
        if (base.empty())
          base = artifact_->directory();
        path = base + "/" + path;
      }
      TXRT_RETURN_IF_ERROR(
          readFileRange(path, arg->offset(), arg->length(), source).withContext(where));
      data = source.data();
    }
    host.resize(bytes);
    if (elements)
      TXRT_RETURN_IF_ERROR(
          convertElements(arg->source_dtype(), data, arg->dtype(), host.data(), elements)
              .withContext(where));
    break;
  }
  default:
    return Status::invalid(where + ": unknown init kind");
  }
  if (host.empty())
    return Status();
  return stream_->copyHostToDevice(slotAddress(arg->slot()), host.data(), host.size())
      .withContext(where);
}

} // namespace txrt
