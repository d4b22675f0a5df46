//===- LoweringContext.cpp - the step lowering's buffers and commands -----===//
//
// SPDX-License-Identifier: Apache-2.0
// The bookkeeping every lowering (StepLowering.cpp and the kernel families)
// goes through: the artifact's element types, a buffer per tensor value,
// scratch buffers, and the commands (launch, memset, GEMM, copy, attention)
// appended in program order with each buffer's live range.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "KernelBuilder.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Reference/Executor.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <cstring>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

unsigned cuda::dtypeBytes(DType type) {
  switch (type) {
  case DType::F64: case DType::I64: return 8;
  case DType::F32: case DType::I32: return 4;
  case DType::F16: case DType::BF16: return 2;
  default: return 1;
  }
}

const char *cuda::dtypeName(DType type) {
  static const char *names[] = {"f32", "f16", "bf16", "f8E4M3FN", "f8E5M2",
                                "f64", "i64", "i32", "i8", "i1"};
  return names[static_cast<unsigned>(type)];
}

std::optional<DType> cuda::dtypeOf(Type type) {
  if (type.isF32()) return DType::F32;
  if (type.isF16()) return DType::F16;
  if (type.isBF16()) return DType::BF16;
  if (type.isF64()) return DType::F64;
  if (isa<Float8E4M3FNType>(type)) return DType::F8E4M3FN;
  if (isa<Float8E5M2Type>(type)) return DType::F8E5M2;
  if (type.isInteger(64)) return DType::I64;
  if (type.isInteger(32)) return DType::I32;
  if (type.isInteger(8)) return DType::I8;
  if (type.isInteger(1)) return DType::I1;
  return std::nullopt;
}

static uint64_t bytesOf(Value v) {
  auto type = typeOf(v);
  return static_cast<uint64_t>(type.getNumElements()) *
         dtypeBytes(*dtypeOf(type.getElementType()));
}

std::string cuda::describeOrigin(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "' at " +
         reference::describeLocation(op->getLoc());
}

//===----------------------------------------------------------------------===//
// LoweringContext
//===----------------------------------------------------------------------===//

unsigned LoweringContext::bufferFor(Value v) {
  auto it = bufferOfValue.find(v);
  if (it != bufferOfValue.end())
    return it->second;
  // A cast recomputed by its users (they read the value it converts), or a
  // result stored as its cast.
  if (Value storage = KernelBuilder::storageOf(v, plan); storage != v) {
    unsigned id = bufferFor(storage);
    bufferOfValue[v] = id;
    return id;
  }
  // A site's entry of packed FP8 state: 4 bytes of the state's buffer, a
  // slot of its own there (kernels and GEMMs read it as any scalar).
  if (auto site = v.getDefiningOp<tx::FP8SiteOp>()) {
    unsigned id = part(bufferFor(site.getState()), site.getIndex() * sizeof(float),
                       sizeof(float), "fp8 site");
    bufferOfValue[v] = id;
    return id;
  }
  // A view shares its input's buffer.
  if (Operation *def = v.getDefiningOp())
    if (isViewOp(def) &&
        plan.isMaterialized(def->getOperand(0))) {
      unsigned id = bufferFor(def->getOperand(0));
      bufferOfValue[v] = id;
      return id;
    }
  Buffer buffer;
  uint64_t bytes = bytesOf(v);
  buffer.bytes = std::max<uint64_t>(bytes, 4);
  buffer.empty = bytes == 0;
  if (Operation *def = v.getDefiningOp())
    buffer.what = def->getName().getStringRef().str();
  buffers.push_back(buffer);
  bufferOfValue[v] = buffers.size() - 1;
  return buffers.size() - 1;
}

unsigned LoweringContext::scratch(uint64_t bytes, llvm::StringRef what) {
  Buffer buffer;
  buffer.bytes = std::max<uint64_t>(bytes, 4);
  buffer.empty = bytes == 0;
  buffer.what = what.str();
  buffers.push_back(buffer);
  return buffers.size() - 1;
}

unsigned LoweringContext::part(unsigned whole, uint64_t offset, uint64_t bytes,
                               llvm::StringRef what) {
  unsigned id = scratch(bytes, what);
  buffers[id].partOf = static_cast<int>(whole);
  buffers[id].offsetInWhole = offset;
  return id;
}

unsigned LoweringContext::offsetTable(OffsetTable table, llvm::StringRef what) {
  table.buffer = scratch(table.words.size() * sizeof(int64_t), what);
  buffers[table.buffer].persistent = true;
  offsetTables.push_back(std::move(table));
  return offsetTables.back().buffer;
}

void LoweringContext::resolveOffsetTables() {
  for (OffsetTable &table : offsetTables) {
    int64_t self = static_cast<int64_t>(program.slots[table.buffer].offset);
    for (auto [word, buffer] : table.offsetOf)
      table.words[word] = static_cast<int64_t>(program.slots[buffer].offset) - self;
    std::vector<uint8_t> bytes(table.words.size() * sizeof(int64_t));
    std::memcpy(bytes.data(), table.words.data(), bytes.size());
    program.constants.push_back({table.buffer, std::move(bytes)});
  }
}

std::string LoweringContext::kernelName(Operation *op) {
  std::string mnemonic = op->getName().stripDialect().str();
  return "k" + std::to_string(builtKernels++) + "_" + mnemonic;
}

void LoweringContext::touch(unsigned buffer) {
  int index = static_cast<int>(program.commands.size());
  Buffer &b = buffers[buffer];
  if (b.firstCommand < 0)
    b.firstCommand = index;
  b.lastCommand = index;
  if (b.partOf >= 0)
    touch(static_cast<unsigned>(b.partOf));
}

unsigned LoweringContext::rootOf(unsigned buffer) const {
  while (buffers[buffer].partOf >= 0)
    buffer = static_cast<unsigned>(buffers[buffer].partOf);
  return buffer;
}

void LoweringContext::awaitCollectivesTouching(llvm::ArrayRef<unsigned> touched) {
  // The last pending group touching any of them: joining it joins the
  // earlier ones too (the communication stream runs them in order).
  int last = -1;
  for (auto [i, group] : llvm::enumerate(pendingGroups))
    for (unsigned buffer : touched)
      if (llvm::is_contained(group.buffers, rootOf(buffer)))
        last = static_cast<int>(i);
  if (last < 0)
    return;
  unsigned id = pendingGroups[last].id;
  for (int i = 0; i <= last; ++i)
    for (unsigned buffer : pendingGroups[i].buffers)
      touch(buffer); // live until the join
  pendingGroups.erase(pendingGroups.begin(), pendingGroups.begin() + last + 1);
  program.commands.push_back(
      {JoinCmd{id}, "wait for the asynchronous collective groups up to " + std::to_string(id)});
  commandUses.push_back({});
}

void LoweringContext::joinAllCollectives() {
  if (pendingGroups.empty())
    return;
  llvm::SmallVector<unsigned> all;
  for (const PendingGroup &group : pendingGroups)
    all.append(group.buffers.begin(), group.buffers.end());
  awaitCollectivesTouching(all);
}

void LoweringContext::markWrittenByLastCommand(unsigned buffer) {
  CommandUses &uses = commandUses.back();
  llvm::erase(uses.reads, buffer);
  uses.writes.push_back(buffer);
}

llvm::SmallVector<unsigned>
LoweringContext::buffersOf(llvm::ArrayRef<Value> values) {
  llvm::SmallVector<unsigned> ids;
  for (Value v : values)
    ids.push_back(bufferFor(v));
  return ids;
}

unsigned LoweringContext::targetSM() const {
  llvm::StringRef target = program.target;
  unsigned sm = 0;
  if (!target.consume_front("sm_") || target.getAsInteger(10, sm))
    return 0;
  return sm;
}

void LoweringContext::launch(KernelBuilder &kernel, Operation *origin,
                             unsigned gridX, llvm::ArrayRef<unsigned> outputs,
                             llvm::ArrayRef<unsigned> inputs) {
  // A grid of no blocks (a kernel over an empty tensor: ONNX allows them)
  // runs nothing, and CUDA refuses it: no command, no kernel.
  if (gridX == 0) {
    kernel.func()->erase();
    return;
  }
  LaunchCmd cmd;
  // Deduplicate by body: print the kernel under a fixed name.
  gpu::GPUFuncOp func = kernel.func();
  std::string name = func.getName().str();
  std::string body;
  {
    func.setName("k");
    llvm::raw_string_ostream os(body);
    func->print(os, OpPrintingFlags().useLocalScope());
    func.setName(name);
    // The same body launched with other blocks is another kernel.
    os << "\nblock " << kernel.blockSize();
  }
  auto [it, inserted] = kernelByBody.try_emplace(body, program.kernelNames.size());
  if (inserted)
    program.kernelNames.push_back(name);
  else
    func->erase();
  cmd.kernel = it->second;
  cmd.grid[0] = gridX;
  cmd.block[0] = kernel.blockSize();
  cmd.sharedBytes = kernel.dynamicSharedBytes();
  CommandUses uses;
  uses.writes.assign(outputs.begin(), outputs.end());
  uses.reads.assign(inputs.begin(), inputs.end());
  cmd.args.assign(outputs.begin(), outputs.end());
  cmd.args.insert(cmd.args.end(), inputs.begin(), inputs.end());
  append({cmd, describeOrigin(origin)}, std::move(uses));
}

void LoweringContext::append(Command command, CommandUses uses) {
  // What it reads or writes must have arrived first (the joins come
  // before it), and is live at it.
  llvm::SmallVector<unsigned> touched(uses.reads.begin(), uses.reads.end());
  touched.append(uses.writes.begin(), uses.writes.end());
  awaitCollectivesTouching(touched);
  for (unsigned buffer : touched)
    touch(buffer);
  program.commands.push_back(std::move(command));
  commandUses.push_back(std::move(uses));
}

void LoweringContext::memset(unsigned buffer, uint32_t value, Operation *origin) {
  append({MemsetCmd{buffer, value}, describeOrigin(origin)}, {{}, {buffer}});
}

LogicalResult LoweringContext::gemm(GemmCmd cmd, Operation *origin) {
  // cuBLASLt takes no empty dimension (and the runtime refuses one).
  if (cmd.m == 0 || cmd.n == 0 || cmd.batch == 0)
    return success();
  if (cmd.k == 0) {
    // D = alpha * (a sum of nothing) + beta * D + bias.
    if (cmd.bias >= 0 || (cmd.beta != 0.0f && cmd.beta != 1.0f))
      return origin->emitError("the GPU GEMM has an empty inner dimension (k = 0) with a ")
             << (cmd.bias >= 0 ? "bias" : "beta other than 0 or 1")
             << ": not supported";
    if (cmd.beta == 0.0f) {
      // Zero bits are +0 in every element type, FP8 included; an amax of D
      // stays at its zeroed start.
      memset(cmd.d, 0, origin);
      if (cmd.geluAux >= 0)
        memset(static_cast<unsigned>(cmd.geluAux), 0, origin);
    }
    return success();
  }
  CommandUses uses;
  uses.reads = {cmd.a, cmd.b};
  for (int scalar : {cmd.aScale, cmd.bScale, cmd.dScale, cmd.dAmax, cmd.bias})
    if (scalar >= 0)
      uses.reads.push_back(static_cast<unsigned>(scalar));
  // beta * C reads D; the amax of D is a running max into zeroed bytes.
  if (cmd.beta != 0.0f)
    uses.reads.push_back(cmd.d);
  uses.writes.push_back(cmd.d);
  if (cmd.geluAux >= 0)
    uses.writes.push_back(static_cast<unsigned>(cmd.geluAux));
  if (cmd.dAmax >= 0)
    uses.writes.push_back(static_cast<unsigned>(cmd.dAmax));
  append({cmd, describeOrigin(origin)}, std::move(uses));
  return success();
}

void LoweringContext::copy(unsigned dst, unsigned src, uint64_t bytes,
                           llvm::StringRef origin, uint64_t srcRankStride) {
  append({CopyCmd{dst, src, bytes, srcRankStride}, origin.str()}, {{src}, {dst}});
}

void LoweringContext::collective(CollectiveCmd cmd, Operation *origin) {
  append({cmd, describeOrigin(origin)}, {{cmd.src}, {cmd.dst}});
}

void LoweringContext::attention(AttentionCmd cmd, Operation *origin) {
  // Views are checked as their whole slots.
  CommandUses uses;
  uses.reads = {cmd.q.slot, cmd.k.slot, cmd.v.slot};
  if (cmd.mask)
    uses.reads.push_back(cmd.mask->slot);
  if (cmd.dropoutRatio > 0.0f)
    uses.reads.append({cmd.dropoutKey, cmd.dropoutOffset});
  if (cmd.backward) {
    uses.reads.append({cmd.o.slot, cmd.lse, cmd.gradO.slot});
    uses.writes = {cmd.gradQ.slot, cmd.gradK.slot, cmd.gradV.slot};
  } else {
    uses.writes = {cmd.o.slot, cmd.lse};
  }
  // FP8: the call reads its scales and scale inverses and writes its amaxes
  // (the memory plan keeps those alive until the scale update reads them).
  if (cmd.fp8)
    for (unsigned i = 0; i < kNumAttentionScalars; ++i) {
      unsigned slot = cmd.fp8Scalars[i];
      if (slot == kNoSlot)
        continue;
      bool amax = isAttentionAmax(static_cast<AttentionScalar>(i));
      (amax ? uses.writes : uses.reads).push_back(slot);
    }
  append({std::move(cmd), describeOrigin(origin)}, std::move(uses));
}
