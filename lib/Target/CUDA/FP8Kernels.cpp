//===- FP8Kernels.cpp - FP8 casts, amax, scale updates and GEMMs ----------===//
//
// SPDX-License-Identifier: Apache-2.0
// The GPU lowering of an fp8 training step (docs/Precision.md, "On the
// GPU"): the f32 <-> FP8 conversions every kernel uses for FP8 tensors,
// tx.amax as a multi-block max with a tx.quantize of the same input fused
// into it, the single-block delayed and current scale updates, and
// FP8 tx.blas_gemms as cuBLASLt FP8 GEMMs with scale pointers. Each follows the
// reference executor (lib/Reference/PrecisionOps.cpp) in f32; everything
// but the GEMM's accumulation order is bit-exact.
//
//===----------------------------------------------------------------------===//

#include "FP8Convert.h"
#include "KernelUtils.h"
#include "Lowering.h"

#include "txopt/Dialect/Tx/IR/StepContract.h"
#include "txopt/Dialect/Tx/IR/TxOps.h"
#include "txopt/Dialect/Tx/Transforms/GemmNormalForm.h"
#include "txopt/Reference/Executor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;



//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

bool cuda::isFP8(Type type) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(type);
}

namespace {
/// FP8Convert.h's operations as arith ops on i32.
struct IROps {
  ImplicitLocOpBuilder &b;
  using V = Value;
  using C = Value;
  V c(uint32_t v) { return arith::ConstantIntOp::create(b, static_cast<int64_t>(v), 32); }
  V add(V x, V y) { return arith::AddIOp::create(b, x, y); }
  V sub(V x, V y) { return arith::SubIOp::create(b, x, y); }
  V band(V x, V y) { return arith::AndIOp::create(b, x, y); }
  V bor(V x, V y) { return arith::OrIOp::create(b, x, y); }
  V shl(V x, V y) { return arith::ShLIOp::create(b, x, y); }
  V shr(V x, V y) { return arith::ShRUIOp::create(b, x, y); }
  V umin(V x, V y) { return arith::MinUIOp::create(b, x, y); }
  C ugt(V x, V y) { return arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, x, y); }
  C uge(V x, V y) { return arith::CmpIOp::create(b, arith::CmpIPredicate::uge, x, y); }
  C eq(V x, V y) { return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, x, y); }
  V select(C c, V x, V y) { return arith::SelectOp::create(b, c, x, y); }
};
} // namespace

static const FP8Params &paramsOf(Type fp8Type) {
  return isa<Float8E5M2Type>(fp8Type) ? kE5M2 : kE4M3FN;
}

/// The largest finite value of an FP8 type.
static double fp8Max(Type fp8Type) {
  return isa<Float8E5M2Type>(fp8Type) ? 57344.0 : 448.0;
}

Value cuda::emitFP8Encode(ImplicitLocOpBuilder &b, Value value, Type fp8Type) {
  if (value.getType().isF64())
    value = arith::TruncFOp::create(b, b.getF32Type(), value);
  IROps ops{b};
  Value bits = arith::BitcastOp::create(b, b.getI32Type(), value);
  Value code = fp8FromF32Bits(ops, bits, paramsOf(fp8Type));
  return arith::TruncIOp::create(b, b.getI8Type(), code);
}

llvm::SmallVector<Value> cuda::emitFP8EncodeHardware(ImplicitLocOpBuilder &b,
                                                     llvm::ArrayRef<Value> values,
                                                     Type fp8Type) {
  const FP8Params &params = paramsOf(fp8Type);
  llvm::SmallVector<Value> converted;
  for (size_t i = 0; i < values.size(); i += 2) {
    Value hi = values[i], lo = i + 1 < values.size() ? values[i + 1] : values[i];
    // The pair packs |hi| into the upper byte, |lo| into the lower.
    Value pair = NVVM::ConvertF32x2ToF8x2Op::create(
        b, b.getI16Type(), hi, lo, NVVM::FPRoundingMode::RN, NVVM::SaturationMode::SATFINITE,
        /*relu=*/false, fp8Type);
    Value wide = arith::ExtUIOp::create(b, b.getI32Type(), pair);
    converted.push_back(arith::TruncIOp::create(
        b, b.getI8Type(), arith::ShRUIOp::create(b, wide, arith::ConstantIntOp::create(b, 8, 32))));
    if (i + 1 < values.size())
      converted.push_back(arith::TruncIOp::create(b, b.getI8Type(), wide));
  }
  // cvt leaves the code of a NaN unspecified; the executor writes the
  // canonical NaN code with the input's sign.
  auto withCanonicalNaNs = [&] {
    llvm::SmallVector<Value> codes;
    for (auto [value, code] : llvm::zip_equal(values, converted)) {
      Value f32Bits = arith::BitcastOp::create(b, b.getI32Type(), value);
      Value sign = arith::TruncIOp::create(
          b, b.getI8Type(),
          arith::AndIOp::create(
              b, arith::ShRUIOp::create(b, f32Bits, arith::ConstantIntOp::create(b, 24, 32)),
              arith::ConstantIntOp::create(b, 0x80, 32)));
      Value nan = arith::OrIOp::create(
          b, sign, arith::ConstantIntOp::create(b, static_cast<int64_t>(params.nanCode), 8));
      Value isNaN = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, value, value);
      codes.push_back(arith::SelectOp::create(b, isNaN, nan, code));
    }
    return codes;
  };
  // A run of values is checked for NaN once (a NaN-propagating max over
  // it, one instruction per value) and fixed up only in the branch a NaN
  // takes: per value the fix-up is about seven instructions, which made
  // the quantizing kernels issue-bound (the GELU output's amax kernel ran
  // at 2 TB/s). A pair or less is fixed up inline.
  if (values.size() <= 2)
    return withCanonicalNaNs();
  Value any = values.front();
  for (Value value : values.drop_front())
    any = arith::MaximumFOp::create(b, any, value);
  Value hasNaN = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, any, any);
  llvm::SmallVector<Type> codeTypes(values.size(), b.getI8Type());
  auto branch = scf::IfOp::create(b, codeTypes, hasNaN, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    scf::YieldOp::create(b, withCanonicalNaNs());
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(b, converted);
  }
  return llvm::SmallVector<Value>(branch.getResults());
}

Value cuda::emitFP8Decode(ImplicitLocOpBuilder &b, Value code, Type fp8Type) {
  IROps ops{b};
  Value wide = arith::ExtUIOp::create(b, b.getI32Type(), code);
  Value bits = fp8ToF32Bits(ops, wide, paramsOf(fp8Type));
  return arith::BitcastOp::create(b, b.getF32Type(), bits);
}

//===----------------------------------------------------------------------===//
// tx.amax (+ tx.quantize)
//===----------------------------------------------------------------------===//

/// Elements each block of the amax kernel covers (16 per thread).
static constexpr int64_t kAmaxPerBlock = kBlockSize * 16;

/// A tx.quantize of |amax|'s input that can be computed in the amax kernel:
/// after it in the block, its scale already known when the amax runs (a
/// step argument or an earlier value: under current scaling the scale
/// comes from this very amax, so that quantize runs on its own), and in
/// memory (a quantize fused into a consumer is recomputed there anyway).
/// Whether |v| already has a buffer of someone else's choosing (a view, an
/// attention layout): a quantizing kernel then leaves it alone. The cached
/// weights' next codes (castCachedWeightsInPlace) are whole state slots,
/// which it may write.
static bool placedElsewhere(LoweringContext &ctx, Value v) {
  return ctx.bufferOfValue.count(v) && !ctx.cachedWeightCodes.contains(v);
}

static tx::QuantizeOp fusableQuantize(LoweringContext &ctx, tx::AmaxOp amax) {
  for (Operation *user : amax.getInput().getUsers()) {
    auto q = dyn_cast<tx::QuantizeOp>(user);
    if (!q || q.getInput() != amax.getInput() || q->getBlock() != amax->getBlock() ||
        !amax->isBeforeInBlock(q) || ctx.loweredElsewhere.contains(q) ||
        !ctx.plan.isMaterialized(q.getResult()) || placedElsewhere(ctx, q.getResult()))
      continue;
    Value scale = q.getScale();
    Operation *def = scale.getDefiningOp();
    if (def && (def->getBlock() != amax->getBlock() || !def->isBeforeInBlock(amax)))
      continue;
    return q;
  }
  return {};
}

/// True when |use| is an FP8 GEMM's untransposed `b` ([..., K, N]), which
/// cuBLASLt's TN form reads as [..., N, K]: the codes are wanted
/// transposed. (A transposed `b` is read as stored.)
static bool isFP8Rhs(OpOperand &use) {
  auto gemm = dyn_cast<tx::BlasGemmOp>(use.getOwner());
  return gemm && gemm.isFP8() && use.getOperandNumber() == 1 && !gemm.getTransposeB();
}

/// The tile a block of the transposing amax kernel quantizes: 64 x 64
/// elements, each of its 256 threads a run of 16 in one row; the codes go
/// through workgroup memory as 32-bit words (rows padded by one word
/// against bank conflicts), and each thread writes the transposed layout
/// from a 4 x 4 block of codes: four word loads from workgroup memory
/// instead of sixteen byte loads, which is what bounded these kernels.
constexpr int64_t kTile = 64, kTileRowWords = kTile / 4 + 1, kRun = 16;
static_assert(kTile * kTile == kBlockSize * kRun, "one run per thread per tile");
/// Tiles a block of the plain code transpose moves (a power of two).
constexpr int64_t kTilesPerTranspose = 4;
/// Tiles a block of the transposing amax kernel quantizes (a power of two).
constexpr int64_t kTilesPerAmax = 2;

/// Whether |view| (the layout a transposed copy is written for) is whole
/// tiles: its last two dims multiples of kTile.
static bool isTileable(llvm::ArrayRef<int64_t> view) {
  size_t r = view.size();
  return r >= 2 && view[r - 1] % kTile == 0 && view[r - 2] % kTile == 0;
}

/// A tx.transpose of the codes that a reader |user| of them starts (the
/// user itself, or through a reshape only it reads), swapping the last two
/// dims, stored, and whole tiles: the forward's input codes transposed for
/// the weight gradient's GEMM, which reads them as lhs. The kernel that
/// writes the codes writes this too (TE's cast-transpose), so the backward
/// has no transpose kernel. Null when |user| is not one.
static tx::TransposeOp transposeOfCodes(LoweringContext &ctx, Operation *user) {
  if (auto reshape = dyn_cast<tx::ReshapeOp>(user)) {
    Value view = reshape.getResult();
    if (!view.hasOneUse() || ctx.plan.isMaterialized(view))
      return {};
    user = *view.getUsers().begin();
  }
  auto transpose = dyn_cast<tx::TransposeOp>(user);
  if (!transpose || !tx::swapsLastTwoDims(transpose) ||
      !ctx.plan.isMaterialized(transpose.getResult()) ||
      placedElsewhere(ctx, transpose.getResult()) ||
      ctx.loweredElsewhere.contains(transpose) ||
      !isTileable(typeOf(transpose.getInput()).getShape()))
    return {};
  return transpose;
}

/// The layouts the codes |q| are wanted in: transposed ([..., N, K]) when
/// an FP8 GEMM reads them as rhs, plain for every other reader, among them
/// a transpose an FP8 GEMM reads as rhs (the backward's dgrad reading the
/// forward's weight codes), which is the plain codes as they are. A
/// quantize kernel writes each wanted layout itself (TE's cast-transpose).
///
/// The rhs may also be a reshape of the codes (a 3-D activation gradient
/// flattened to 2-D for the weight gradient): then the transposed layout
/// is the reshape's, |transposedValue|, and the reshape is never computed.
///
/// Given |ctx|, a stored transpose of the codes (transposeOfCodes) is
/// |transposeOp|, written by the quantizing kernel, when no rhs wants the
/// transposed layout already: a kernel writes one transposed copy, and a
/// further transpose reads the plain codes in its own kernel.
struct CodeLayouts {
  bool plain = false;
  Value transposedValue;
  tx::TransposeOp transposeOp;

  /// The [..., R, C] view whose transpose the kernel writes.
  llvm::ArrayRef<int64_t> transposedView() const {
    tx::TransposeOp op = transposeOp;
    return op ? typeOf(op.getInput()).getShape() : typeOf(transposedValue).getShape();
  }
  bool writesTransposed() const { return transposedValue || transposeOp; }
};
static CodeLayouts layoutsOf(Value q, LoweringContext *ctx = nullptr) {
  CodeLayouts wanted;
  auto readAsRhs = [](Value v) {
    return typeOf(v).getRank() >= 2 && !v.use_empty() &&
           llvm::all_of(v.getUses(), isFP8Rhs);
  };
  llvm::SmallVector<tx::TransposeOp, 1> transposes;
  for (OpOperand &use : q.getUses()) {
    Operation *user = use.getOwner();
    Value read = isa<tx::ReshapeOp>(user) ? user->getResult(0) : q;
    bool rhs = read == q ? isFP8Rhs(use) && typeOf(q).getRank() >= 2
                         : readAsRhs(read);
    if (rhs && (!wanted.transposedValue || wanted.transposedValue == read))
      wanted.transposedValue = read;
    else if (tx::TransposeOp t = ctx ? transposeOfCodes(*ctx, user) : tx::TransposeOp())
      transposes.push_back(t);
    else
      wanted.plain = true;
  }
  if (!wanted.transposedValue && transposes.size() == 1)
    wanted.transposeOp = transposes.front();
  else if (!transposes.empty())
    wanted.plain = true;
  return wanted;
}

/// |index| with its last two entries swapped, linearized over |shape| with
/// its last two dims swapped.
static Value transposedLinear(KernelBuilder &kb, llvm::ArrayRef<Value> index,
                              llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<Value> ti(index.begin(), index.end());
  llvm::SmallVector<int64_t> ts(shape.begin(), shape.end());
  size_t r = ti.size();
  std::swap(ti[r - 1], ti[r - 2]);
  std::swap(ts[r - 1], ts[r - 2]);
  return kb.linearize(ti, ts);
}

/// Thread 0 folds the block's max |x| |total| into the amax: an unsigned
/// atomic max of the f32 bits. Non-negative floats order as their bits do
/// and every positive NaN lies above +inf, so this is the executor's
/// NaN-propagating max; NaN is canonicalized first so the result does not
/// depend on which block wins.
void cuda::emitAtomicAmax(KernelBuilder &kb, Value total, Value amaxArg) {
  auto &b = kb.builder();
  Value isFirst = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(), kb.idx(0));
  kb.ifThen(isFirst, [&] {
    Value bits = arith::BitcastOp::create(b, b.getI32Type(), total);
    Value isNaN = arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, total, total);
    bits = arith::SelectOp::create(
        b, isNaN, arith::ConstantIntOp::create(b, 0x7fc00000, 32), bits);
    memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::maxu, bits, amaxArg,
                                ValueRange{kb.idx(0)});
  });
}

namespace {
/// The 64 x 64 tile of a [..., R, C] view that tile index |tileIndex|
/// (the block index, unless a block does several tiles) covers, and the
/// run of kRun elements thread t owns in it (row t / 4, columns
/// (t % 4) * 16 ...).
struct Tile {
  int64_t rows, cols;
  Value batch, tileR, tileC, localRow, localCol;

  Tile(KernelBuilder &kb, llvm::ArrayRef<int64_t> view, Value tileIndex = Value())
      : rows(view[view.size() - 2]), cols(view.back()) {
    auto &b = kb.builder();
    Value block = tileIndex ? tileIndex : kb.blockIndex(), t = kb.threadIndex();
    int64_t tilesC = cols / kTile, tilesR = rows / kTile;
    tileC = arith::RemUIOp::create(b, block, kb.idx(tilesC));
    tileR = arith::RemUIOp::create(b, arith::DivUIOp::create(b, block, kb.idx(tilesC)),
                                   kb.idx(tilesR));
    batch = arith::DivUIOp::create(b, block, kb.idx(tilesC * tilesR));
    localRow = arith::DivUIOp::create(b, t, kb.idx(kTile / kRun));
    localCol = arith::MulIOp::create(b, arith::RemUIOp::create(b, t, kb.idx(kTile / kRun)),
                                     kb.idx(kRun));
  }

  /// The linear index of the first element of this thread's run.
  Value firstOfRun(KernelBuilder &kb) const {
    auto &b = kb.builder();
    Value row = arith::AddIOp::create(b, arith::MulIOp::create(b, tileR, kb.idx(kTile)), localRow);
    Value col = arith::AddIOp::create(b, arith::MulIOp::create(b, tileC, kb.idx(kTile)), localCol);
    Value batchRow = arith::AddIOp::create(b, arith::MulIOp::create(b, batch, kb.idx(rows)), row);
    return arith::AddIOp::create(b, arith::MulIOp::create(b, batchRow, kb.idx(cols)), col);
  }

  /// The index in |shape| of this thread's run's first element, when
  /// |shape| flattens to the view with the same innermost dim: the row
  /// delinearized over the outer dims, the column as it is (visibly a
  /// multiple of kRun, which the vectorizer needs).
  llvm::SmallVector<Value> runIndex(KernelBuilder &kb, llvm::ArrayRef<int64_t> shape) const {
    auto &b = kb.builder();
    Value row = arith::AddIOp::create(b, arith::MulIOp::create(b, tileR, kb.idx(kTile)), localRow);
    Value col = arith::AddIOp::create(b, arith::MulIOp::create(b, tileC, kb.idx(kTile)), localCol);
    Value flatRow = arith::AddIOp::create(b, arith::MulIOp::create(b, batch, kb.idx(rows)), row);
    llvm::SmallVector<Value> index = kb.delinearize(flatRow, shape.drop_back());
    index.push_back(col);
    return index;
  }

  /// Stores this thread's run of kRun codes (i8) into the workgroup tile
  /// |words| (of tile |slot| when it holds several), four codes a word,
  /// the first in the low byte (memory order).
  void storeRun(KernelBuilder &kb, Value words, llvm::ArrayRef<Value> codes,
                int64_t slot = 0) const {
    auto &b = kb.builder();
    llvm::SmallVector<Value, kRun / 4> packed;
    for (int64_t w = 0; w < kRun / 4; ++w) {
      Value word = arith::ConstantIntOp::create(b, 0, 32);
      for (int64_t e = 0; e < 4; ++e) {
        Value byte = arith::ExtUIOp::create(b, b.getI32Type(), codes[4 * w + e]);
        word = arith::OrIOp::create(
            b, word, arith::ShLIOp::create(b, byte, arith::ConstantIntOp::create(b, 8 * e, 32)));
      }
      packed.push_back(word);
    }
    storeRunWords(kb, words, packed, slot);
  }

  /// The same with the run already packed into kRun / 4 words.
  void storeRunWords(KernelBuilder &kb, Value words, llvm::ArrayRef<Value> packed,
                     int64_t slot = 0) const {
    auto &b = kb.builder();
    Value rowStart = arith::AddIOp::create(
        b, kb.idx(slot * kTile * kTileRowWords),
        arith::MulIOp::create(b, localRow, kb.idx(kTileRowWords)));
    Value firstWord = arith::AddIOp::create(
        b, rowStart, arith::DivUIOp::create(b, localCol, kb.idx(4)));
    for (auto [w, word] : llvm::enumerate(packed))
      memref::StoreOp::create(b, word, words,
                              ValueRange{arith::AddIOp::create(b, firstWord, kb.idx(w))});
  }

  /// Writes the workgroup tile |words| (tile |slot|) transposed into |dst|
  /// ([..., C, R]); the caller has put a barrier after every storeRun.
  /// Thread t takes the 4 x 4 block of codes at tile rows 4 (t % 16) ...
  /// and tile columns 4 (t / 16) ...: one word from each of the four rows,
  /// then byte k of the four words is transposed row 4 (t / 16) + k's four
  /// codes, stored together (sixteen threads write 64 consecutive bytes of
  /// a transposed row).
  void storeTransposed(KernelBuilder &kb, Value words, Value dst, int64_t slot = 0) const {
    auto &b = kb.builder();
    Value t = kb.threadIndex();
    Value rowGroup = arith::RemUIOp::create(b, t, kb.idx(kTile / 4));
    Value colWord = arith::DivUIOp::create(b, t, kb.idx(kTile / 4));
    Value firstRow = arith::MulIOp::create(b, rowGroup, kb.idx(4));
    llvm::SmallVector<Value, 4> in;
    for (int64_t i = 0; i < 4; ++i) {
      Value row = arith::AddIOp::create(b, firstRow, kb.idx(i));
      Value at = arith::AddIOp::create(
          b, kb.idx(slot * kTile * kTileRowWords),
          arith::AddIOp::create(b, arith::MulIOp::create(b, row, kb.idx(kTileRowWords)),
                                colWord));
      in.push_back(memref::LoadOp::create(b, words, ValueRange{at}));
    }
    Value outRowBase = arith::AddIOp::create(b, arith::MulIOp::create(b, tileC, kb.idx(kTile)),
                                             arith::MulIOp::create(b, colWord, kb.idx(4)));
    Value outCol = arith::AddIOp::create(b, arith::MulIOp::create(b, tileR, kb.idx(kTile)),
                                         firstRow);
    for (int64_t k = 0; k < 4; ++k) {
      Value outRow = arith::AddIOp::create(
          b, arith::AddIOp::create(b, arith::MulIOp::create(b, batch, kb.idx(cols)), outRowBase),
          kb.idx(k));
      Value out = arith::AddIOp::create(b, arith::MulIOp::create(b, outRow, kb.idx(rows)), outCol);
      for (int64_t e = 0; e < 4; ++e) {
        Value code = arith::TruncIOp::create(
            b, b.getI8Type(),
            arith::ShRUIOp::create(b, in[e], arith::ConstantIntOp::create(b, 8 * k, 32)));
        memref::StoreOp::create(b, code, dst, ValueRange{arith::AddIOp::create(b, out, kb.idx(e))});
      }
    }
  }
};

/// Workgroup memory for |tiles| tiles of codes as words, added to |kb|'s
/// kernel.
Value addTileMemory(KernelBuilder &kb, int64_t tiles = 1) {
  auto &b = kb.builder();
  return kb.func().addWorkgroupAttribution(
      MemRefType::get({tiles * kTile * kTileRowWords}, b.getI32Type(),
                      MemRefLayoutAttrInterface(),
                      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup)),
      b.getLoc());
}
} // namespace

/// Whether the kernels' target has the FP8 conversion instructions
/// (sm_89 and newer: every target an FP8 step runs on, since its GEMMs need
/// them too).
bool cuda::hasFP8Conversions(LoweringContext &ctx) { return ctx.targetSM() >= 89; }

llvm::SmallVector<Value> cuda::emitFP8Codes(LoweringContext &ctx, ImplicitLocOpBuilder &b,
                                            llvm::ArrayRef<Value> scaled, Type fp8Type) {
  if (hasFP8Conversions(ctx))
    return emitFP8EncodeHardware(b, scaled, fp8Type);
  llvm::SmallVector<Value> codes;
  for (Value v : scaled)
    codes.push_back(emitFP8Encode(b, v, fp8Type));
  return codes;
}

/// Whether the amax of |x| is lowered as the tiled kernel over x's own rows
/// (lowerAmaxByThreadRuns with whole 64 x 64 tiles of a transposed layout
/// whose last dim is x's): the kernel that can also sum x's columns.
static bool quantizesByRowTiles(llvm::ArrayRef<int64_t> shape, tx::QuantizeOp quantize,
                                const CodeLayouts &layouts) {
  return quantize && !shape.empty() && shape.back() % kRun == 0 && layouts.writesTransposed() &&
         isTileable(layouts.transposedView()) && layouts.transposedView().back() == shape.back();
}

/// The value whose columns the amax kernel of |x| can sum for a
/// reduce_sum: x itself, or the f32 value x is a recomputed cast of (the
/// FP8 step quantizes bf16(v) while the bias gradient sums v in f32; a
/// stored cast would be a second tensor to read).
static Value summableSource(LoweringContext &ctx, Value x) {
  auto castOp = x.getDefiningOp<tx::CastOp>();
  if (!castOp || ctx.plan.isMaterialized(x))
    return x;
  return castOp.getInput();
}

/// Whether every element of |v| (f32) is an element of a |narrow| tensor
/// widened exactly: casts from |narrow| moved around by transposes,
/// reshapes and concats (the attention's q/k/v gradients, written in bf16
/// and joined for the fused projection). Summing the stored narrow tensor
/// is then summing v.
static bool widensExactly(Value v, Type narrow) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  // bf16 and f16 widen exactly to f32.
  if (auto c = dyn_cast<tx::CastOp>(def))
    return typeOf(c.getInput()).getElementType() == narrow && (narrow.isBF16() || narrow.isF16()) &&
           typeOf(v).getElementType().isF32();
  if (!isViewOp(def) && !isa<tx::TransposeOp, tx::ConcatOp>(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value in) { return widensExactly(in, narrow); });
}

/// A reduce_sum of |v| over every axis but the last (a bias gradient),
/// f32, in |amax|'s block before it, that nothing reads before |amax| and
/// whose kernel does nothing else (no companion cast, no value recomputed
/// alongside, not part of a packed sum: packSumsOfSquares marks those
/// loweredElsewhere).
static tx::ReduceSumOp columnSumOf(LoweringContext &ctx, Value v, tx::AmaxOp amax) {
  auto shape = typeOf(v).getShape();
  int64_t rank = shape.size();
  if (rank < 2 || !typeOf(v).getElementType().isF32())
    return {};
  // A stored cast of v is a companion the sum's kernel would have written
  // (unless it is how v itself is stored).
  for (Operation *user : v.getUsers())
    if (auto c = dyn_cast<tx::CastOp>(user); c && ctx.plan.isMaterialized(c.getResult()) &&
                                              ctx.plan.storedAs.lookup(v) != c.getResult())
      return {};
  for (Operation *user : v.getUsers()) {
    auto sum = dyn_cast<tx::ReduceSumOp>(user);
    if (!sum || sum->getBlock() != amax->getBlock() || !sum->isBeforeInBlock(amax))
      continue;
    Value result = sum.getResult();
    if (!sumsLeadingAxes(sum) || !typeOf(result).getElementType().isF32() ||
        typeOf(result).getNumElements() != shape.back() || !ctx.plan.isMaterialized(result) ||
        ctx.plan.storedAs.count(result) || ctx.bufferOfValue.count(result) ||
        ctx.loweredElsewhere.contains(sum) || ctx.recomputedBySum.count(sum) ||
        ctx.deferredAfter.count(sum))
      continue;
    if (llvm::any_of(result.getUsers(), [&](Operation *reader) {
          return reader->getBlock() == amax->getBlock() && reader->isBeforeInBlock(amax);
        }))
      continue;
    return sum;
  }
  return {};
}

void cuda::planColumnSumsInAmax(LoweringContext &ctx, func::FuncOp step) {
  for (auto amax : step.getBody().front().getOps<tx::AmaxOp>()) {
    if (ctx.loweredElsewhere.contains(amax))
      continue;
    Value x = amax.getInput();
    tx::QuantizeOp quantize = fusableQuantize(ctx, amax);
    // Only the tiled kernel has whole 64-row tiles to sum.
    if (!quantize ||
        !quantizesByRowTiles(typeOf(x).getShape(), quantize, layoutsOf(quantize.getResult(), &ctx)))
      continue;
    Value source = summableSource(ctx, x);
    tx::ReduceSumOp sum = columnSumOf(ctx, source, amax);
    // A stored narrow x whose f32 source widens it exactly, or that a sum
    // reads widened: the kernel sums x as it loads it.
    if (!sum)
      source = x;
    auto castOp = x.getDefiningOp<tx::CastOp>();
    Type narrow = typeOf(x).getElementType();
    if (!sum && castOp && ctx.plan.isMaterialized(x) && widensExactly(castOp.getInput(), narrow))
      sum = columnSumOf(ctx, castOp.getInput(), amax);
    for (Operation *user : x.getUsers()) {
      if (sum)
        break;
      auto widened = dyn_cast<tx::CastOp>(user);
      if (widened && !ctx.plan.isMaterialized(widened.getResult()) &&
          widensExactly(widened.getResult(), narrow))
        sum = columnSumOf(ctx, widened.getResult(), amax);
    }
    if (sum) {
      ctx.columnSumInAmax[amax] = {sum, source};
      ctx.loweredElsewhere.insert(sum);
    }
  }
}

/// The amax kernel's column sums of its 64 x 64 tile (planColumnSumsInAmax):
/// the |summands| of thread |t| (its run of kRun columns of one row) added
/// in a fixed order, within a warp (8 rows; lanes 4, 8 and 16 apart share
/// columns) by halving exchanges, then the 8 warps in order through
/// |warpSums| (workgroup memory), and the tile's 64 sums stored as one
/// partial row of |partials| ([parts, |sumCols|]).
///
/// Halving: at each of the three exchanges a lane keeps half of its
/// remaining sums and sends its partner the other half, so the 16 sums take
/// 8 + 4 + 2 shuffles instead of 3 x 16, and each lane ends with 2 of its
/// run's 16 column sums over the warp's 8 rows. Every sum is the same tree
/// of additions as the butterfly's (own + partner at each level, and a + b
/// is b + a in IEEE arithmetic), so the bits are unchanged. Issue-bound
/// kernels (the GELU gradient's cast) spent a fifth of their instructions
/// on shifts, permutes and these shuffles (Nsight Compute, session 40).
static void emitTileColumnSums(KernelBuilder &kb, const Tile &coords, Value t,
                               llvm::SmallVectorImpl<Value> &summands, Value warpSums,
                               Value partials, int64_t sumCols) {
  auto &b = kb.builder();
  Value lane = arith::RemUIOp::create(b, t, kb.idx(32));
  Value warp = arith::DivUIOp::create(b, t, kb.idx(32));
  // The first of the lane's remaining sums' run positions: each exchange
  // that keeps the upper half adds the half's size.
  Value firstKept = kb.idx(0);
  llvm::SmallVector<Value> remaining(summands.begin(), summands.end());
  static_assert(kRun == 16, "three halvings leave two sums a lane");
  for (int32_t offset : {4, 8, 16}) {
    int64_t half = static_cast<int64_t>(remaining.size()) / 2;
    Value bit = arith::AndIOp::create(b, lane, kb.idx(offset));
    Value upper = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, bit, kb.idx(0));
    firstKept = arith::AddIOp::create(
        b, firstKept, arith::SelectOp::create(b, upper, kb.idx(half), kb.idx(0)));
    llvm::SmallVector<Value> kept;
    for (int64_t i = 0; i < half; ++i) {
      Value low = remaining[i], high = remaining[i + half];
      Value mine = arith::SelectOp::create(b, upper, high, low);
      Value theirs = arith::SelectOp::create(b, upper, low, high);
      Value received =
          gpu::ShuffleOp::create(b, theirs, offset, 32, gpu::ShuffleMode::XOR).getShuffleResult();
      kept.push_back(arith::AddFOp::create(b, mine, received));
    }
    remaining = std::move(kept);
  }
  Value first = arith::AddIOp::create(
      b, arith::AddIOp::create(b, arith::MulIOp::create(b, warp, kb.idx(kTile)), coords.localCol),
      firstKept);
  for (auto [e, s] : llvm::enumerate(remaining))
    memref::StoreOp::create(b, s, warpSums,
                            ValueRange{arith::AddIOp::create(b, first, kb.idx(e))});
  gpu::BarrierOp::create(b);
  kb.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t, kb.idx(kTile)), [&] {
    Value total = kb.f32(0.0);
    for (int64_t w = 0; w < kBlockSize / 32; ++w)
      total = arith::AddFOp::create(
          b, total,
          memref::LoadOp::create(b, warpSums,
                                 ValueRange{arith::AddIOp::create(b, kb.idx(w * kTile), t)}));
    Value part = arith::AddIOp::create(
        b, arith::MulIOp::create(b, coords.batch, kb.idx(coords.rows / kTile)), coords.tileR);
    Value col = arith::AddIOp::create(b, arith::MulIOp::create(b, coords.tileC, kb.idx(kTile)), t);
    memref::StoreOp::create(
        b, total, partials,
        ValueRange{arith::AddIOp::create(b, arith::MulIOp::create(b, part, kb.idx(sumCols)), col)});
  });
}

/// tx.amax with its fused quantize, each thread reading and quantizing a
/// run of kRun consecutive elements (so its loads and stores become 16-byte
/// vector accesses): block b covers elements [b * 4096, (b + 1) * 4096).
/// When the codes are also wanted transposed, block b covers one 64 x 64
/// tile of the [..., R, C] view instead (kTilesPerAmax consecutive ones
/// for a plain cast of a stored 16-bit tensor), and after a barrier each
/// thread writes a run of 16 codes of one transposed row of each. The amax reduction and
/// the atomic are lowerAmax's.
static LogicalResult lowerAmaxByThreadRuns(LoweringContext &ctx, Operation *op,
                                           tx::QuantizeOp quantize, CodeLayouts layouts,
                                           LoweringContext::ColumnSumInAmax columnSum = {}) {
  auto amax = cast<tx::AmaxOp>(op);
  Value x = amax.getInput(), result = amax.getResult();
  auto shape = typeOf(x).getShape();
  int64_t n = typeOf(x).getNumElements();
  llvm::SetVector<Value> inputs;
  KernelBuilder::collectInputs(result, ctx.plan, inputs);
  if (quantize)
    KernelBuilder::collectInputs(quantize.getResult(), ctx.plan, inputs);
  Value summed = columnSum.summed;
  if (summed)
    KernelBuilder::collectReadsOf(summed, ctx.plan, inputs);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, inputs.getArrayRef(), ctx.plan,
                   /*workgroupFloats=*/32);
  auto &b = kb.builder();
  Value amaxArg = kb.insertBufferArgument(0, MemRefType::get({1}, b.getI32Type()));
  Value plainArg, transposedArg, partialsArg;
  Type fp8Type;
  // The column sum's partial rows: one per 64-row tile, [parts, cols].
  int64_t sumCols = shape.empty() ? 0 : shape.back(), parts = summed ? n / sumCols / kTile : 0;
  if (quantize) {
    auto codes = MemRefType::get({n}, b.getI8Type());
    unsigned position = 1;
    if (layouts.plain)
      plainArg = kb.insertBufferArgument(position++, codes);
    if (layouts.writesTransposed())
      transposedArg = kb.insertBufferArgument(position++, codes);
    if (summed)
      partialsArg = kb.insertBufferArgument(
          position++, MemRefType::get({parts * sumCols}, b.getF32Type()));
    fp8Type = typeOf(quantize.getResult()).getElementType();
  }
  // Tiles a block quantizes. A plain cast of a stored 16-bit tensor reads
  // 8 KB a tile, 32 bytes a thread: too few bytes in flight for an H200's
  // bandwidth, so it takes several tiles, their loads issued together. A
  // kernel computing its input (a GELU, a gradient) or reading f32 keeps one:
  // the second tile's values would cost it occupancy (GPT-2's: 64 -> 95
  // registers, two blocks an SM instead of four).
  int64_t perBlock = 1;
  if (transposedArg && !summed && ctx.plan.isMaterialized(x) &&
      typeOf(x).getElementType().getIntOrFloatBitWidth() <= 16) {
    perBlock = kTilesPerAmax;
    while ((n / (kTile * kTile)) % perBlock != 0)
      perBlock /= 2;
  }
  Value tile = transposedArg ? addTileMemory(kb, perBlock) : Value();
  // Each warp's column sums of its 8 rows, [warp, 64 columns].
  Value warpSums = summed ? kb.func().addWorkgroupAttribution(
                                MemRefType::get({(kBlockSize / 32) * kTile}, b.getF32Type(),
                                                MemRefLayoutAttrInterface(),
                                                gpu::AddressSpaceAttr::get(
                                                    b.getContext(), gpu::AddressSpace::Workgroup)),
                                b.getLoc())
                          : Value();
  Value scale = quantize ? kb.emit(quantize.getScale(), {}) : Value();
  Value t = kb.threadIndex();
  // The thread's run: its first element's linear index, and its index in
  // |shape| with the innermost dim counted in runs (so that the run's
  // columns are visibly 16 consecutive, 16-aligned ones, which LLVM's
  // load/store vectorizer needs to merge the accesses). A block past the
  // last run (a partial last block) repeats the last run and stores
  // nothing: the max is unchanged by repeats.
  llvm::SmallVector<Tile> coords;
  llvm::SmallVector<Value> runs;
  Value stores = Value();
  int64_t grid;
  if (transposedArg) {
    Value firstTile = arith::MulIOp::create(b, kb.blockIndex(), kb.idx(perBlock));
    for (int64_t g = 0; g < perBlock; ++g) {
      coords.emplace_back(kb, layouts.transposedView(),
                          arith::AddIOp::create(b, firstTile, kb.idx(g)));
      runs.push_back(arith::DivUIOp::create(b, coords.back().firstOfRun(kb), kb.idx(kRun)));
    }
    grid = n / (kTile * kTile) / perBlock;
  } else {
    int64_t total = n / kRun;
    grid = ceilDiv(total, kBlockSize);
    Value own = arith::AddIOp::create(
        b, arith::MulIOp::create(b, kb.blockIndex(), kb.idx(kBlockSize)), t);
    stores = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, own, kb.idx(total));
    runs.push_back(arith::MinUIOp::create(b, own, kb.idx(total - 1)));
  }
  Value acc = kb.f32(0.0);
  llvm::SmallVector<Value> firsts;
  // The column sum's summands: only with one tile a block (a summing kernel
  // computes its input, so it keeps one).
  assert((!summed || perBlock == 1) && "a column-summing amax kernel takes one tile a block");
  llvm::SmallVector<Value> summands;
  llvm::SmallVector<llvm::SmallVector<Value>> codes(perBlock);
  for (int64_t g = 0; g < perBlock; ++g) {
    Tile *coord = coords.empty() ? nullptr : &coords[g];
    firsts.push_back(coord ? coord->firstOfRun(kb)
                           : arith::MulIOp::create(b, runs[g], kb.idx(kRun)));
    llvm::SmallVector<Value> index;
    Value column;
    if (coord && shape.back() == coord->cols) {
      index = coord->runIndex(kb, shape);
      column = index.back();
    } else {
      llvm::SmallVector<int64_t> runShape(shape.begin(), shape.end());
      runShape.back() /= kRun;
      index = kb.delinearize(runs[g], runShape);
      column = arith::MulIOp::create(b, index.back(), kb.idx(kRun));
    }
    llvm::SmallVector<Value> scaled;
    for (int64_t e = 0; e < kRun; ++e) {
      index.back() = arith::AddIOp::create(b, column, kb.idx(e));
      // The summed value first: x, a recomputed cast of it, then reuses it.
      if (summed)
        summands.push_back(kb.emit(summed, index));
      Value v = kb.emit(x, index);
      if (v.getType().isF64())
        v = arith::TruncFOp::create(b, b.getF32Type(), v);
      acc = arith::MaximumFOp::create(b, acc, math::AbsFOp::create(b, v));
      // f32(x * scale), then the saturating FP8 rounding: tx.quantize.
      if (quantize)
        scaled.push_back(arith::MulFOp::create(b, v, scale));
    }
    if (quantize)
      codes[g] = emitFP8Codes(ctx, b, scaled, fp8Type);
  }
  auto storeRun = [&](Value dst, int64_t g) {
    for (auto [e, code] : llvm::enumerate(codes[g]))
      memref::StoreOp::create(b, code, dst,
                              ValueRange{arith::AddIOp::create(b, firsts[g], kb.idx(e))});
  };
  for (int64_t g = 0; g < perBlock; ++g) {
    if (plainArg) {
      if (stores)
        kb.ifThen(stores, [&] { storeRun(plainArg, g); });
      else
        storeRun(plainArg, g);
    }
    if (transposedArg)
      coords[g].storeRun(kb, tile, codes[g], g);
  }
  if (transposedArg) {
    gpu::BarrierOp::create(b);
    for (int64_t g = 0; g < perBlock; ++g)
      coords[g].storeTransposed(kb, tile, transposedArg, g);
  }
  if (summed)
    emitTileColumnSums(kb, coords.front(), t, summands, warpSums, partialsArg, sumCols);
  emitAtomicAmax(kb, kb.blockReduce(acc, /*isMax=*/true), amaxArg);
  kb.finish();
  kb.groupMemoryAccesses();
  if (failed(kb.status()))
    return failure();
  llvm::SmallVector<unsigned> outputs{ctx.bufferFor(result)};
  if (quantize) {
    Value q = quantize.getResult();
    if (layouts.plain)
      outputs.push_back(ctx.bufferFor(q));
    if (layouts.transposedValue) {
      unsigned codes = ctx.scratch(n, "fp8 gemm rhs, transposed");
      ctx.fp8Transposed[layouts.transposedValue] = codes;
      outputs.push_back(codes);
    }
    if (layouts.transposeOp) {
      outputs.push_back(ctx.bufferFor(layouts.transposeOp.getResult()));
      ctx.loweredElsewhere.insert(layouts.transposeOp);
    }
    ctx.loweredElsewhere.insert(quantize);
  }
  unsigned partials = 0;
  if (summed) {
    partials = ctx.scratch(parts * sumCols * 4, "column sum partials (amax kernel)");
    outputs.push_back(partials);
  }
  ctx.launch(kb, op, static_cast<unsigned>(grid), outputs, ctx.buffersOf(inputs.getArrayRef()));
  if (!summed)
    return success();
  // The second stage, as a column reduction's: each column adds its
  // partial rows in order, waiting to share a launch with the others.
  return sumPartialRows(ctx, columnSum.sum, partials, parts, columnSum.sum->getResult(0));
}

void cuda::planAdamWritingCodes(LoweringContext &ctx, func::FuncOp step) {
  for (auto amax : step.getBody().front().getOps<tx::AmaxOp>()) {
    if (!ctx.cachedWeightCodes.contains(amax.getResult()))
      continue;
    Value x = amax.getInput(), root = x;
    auto castOp = x.getDefiningOp<tx::CastOp>();
    if (castOp) {
      // The Adam kernel rounds the updated weight itself: the cast must be
      // one its readers recompute, not a stored value.
      if (ctx.plan.isMaterialized(x))
        continue;
      root = castOp.getInput();
    }
    auto adam = root.getDefiningOp<tx::AdamOp>();
    if (!adam)
      continue;
    unsigned n = adam.getNumParams();
    unsigned t = cast<OpResult>(root).getResultNumber();
    if (t >= n || !typeOf(root).getElementType().isF32())
      continue;
    bool packable = adamUpdatesPacked(ctx, adam, t);
    tx::QuantizeOp quantize = fusableQuantize(ctx, amax);
    // Nothing but the cast reads the updated weight (the step returns it).
    auto castOnly = [&](Value v) {
      return llvm::all_of(v.getUsers(), [&](Operation *user) {
        return isa<func::ReturnOp>(user) || user == castOp || user == amax ||
               user == quantize.getOperation();
      });
    };
    if (!packable || !quantize || !ctx.cachedWeightCodes.contains(quantize.getResult()) ||
        !castOnly(root) || (castOp && !castOnly(x)))
      continue;
    ctx.adamWritesCodes[root] = {amax, quantize};
    ctx.loweredElsewhere.insert(amax);
    ctx.loweredElsewhere.insert(quantize);
  }
}

void cuda::packAmaxes(LoweringContext &ctx, func::FuncOp func) {
  llvm::SmallVector<Value> results;
  for (auto amax : func.getBody().front().getOps<tx::AmaxOp>()) {
    Value result = amax.getResult();
    // A returned amax keeps a buffer of its own: the function's results
    // stay readable to its end, which a part's block would not know.
    if (!ctx.bufferOfValue.count(result) &&
        llvm::none_of(result.getUsers(), [](Operation *u) { return isa<func::ReturnOp>(u); }))
      results.push_back(result);
  }
  if (results.size() < 2)
    return;
  // Parts one slot alignment apart, so each is a slot like any other.
  unsigned block = ctx.scratch(results.size() * kSlotAlignment, "packed amaxes");
  for (auto [i, result] : llvm::enumerate(results)) {
    ctx.bufferOfValue[result] = ctx.part(block, i * kSlotAlignment, 4, "tx.amax");
    ctx.amaxBlockOf[result] = block;
  }
}

/// tx.amax: a memset of the result (or, the first of a packed block, of
/// the whole block: packAmaxes), then one kernel whose blocks each take
/// max |x| (the input's producers computed inline) and fold it in with
/// emitAtomicAmax. A fused tx.quantize writes each element's code on the
/// way (TE's cast kernels compute the amax the same way), in each layout
/// its readers want. Usually lowerAmaxByThreadRuns builds the kernel; this
/// one-element path (kAmaxPerBlock elements per block, 256 apart per
/// thread) is the fallback for shapes its runs and tiles do not cover.
LogicalResult cuda::lowerAmax(LoweringContext &ctx, Operation *op) {
  auto amax = cast<tx::AmaxOp>(op);
  Value x = amax.getInput(), result = amax.getResult();
  auto shape = typeOf(x).getShape();
  int64_t n = typeOf(x).getNumElements();
  unsigned out = ctx.bufferFor(result);
  auto block = ctx.amaxBlockOf.find(result);
  if (block == ctx.amaxBlockOf.end())
    ctx.memset(out, 0, op);
  else if (ctx.zeroedAmaxBlocks.insert(block->second).second)
    ctx.memset(block->second, 0, op);
  if (n == 0)
    return success();
  tx::QuantizeOp quantize = fusableQuantize(ctx, amax);
  CodeLayouts layouts = quantize ? layoutsOf(quantize.getResult(), &ctx) : CodeLayouts();
  // A bias gradient planned into this kernel (planColumnSumsInAmax), when
  // the kernel is the tiled one over x's rows as planned; otherwise the
  // sum gets its own kernels here, before anything reads it.
  LoweringContext::ColumnSumInAmax columnSum = ctx.columnSumInAmax.lookup(op);
  if (columnSum.sum && !quantizesByRowTiles(shape, quantize, layouts)) {
    ctx.loweredElsewhere.erase(columnSum.sum);
    if (failed(lowerReduction(ctx, columnSum.sum)))
      return failure();
    columnSum = {};
  }
  if (shape.size() >= 1 && shape.back() % kRun == 0 &&
      (!layouts.writesTransposed() || isTileable(layouts.transposedView())))
    return lowerAmaxByThreadRuns(ctx, op, quantize, layouts, columnSum);
  // The element-at-a-time path below writes an rhs's transposed layout but
  // leaves a transpose of the codes to its own kernel.
  if (layouts.transposeOp) {
    layouts.transposeOp = {};
    layouts.plain = true;
  }
  Value transposedValue = layouts.transposedValue;
  // Rows not made of whole runs, or a transposed layout not made of whole
  // tiles: one element at a time, 256 apart, each transposed store on its
  // own (about a tenth of the runs' bandwidth; the FP8 GEMM dims are
  // multiples of 16, the models' here of 64).

  llvm::SetVector<Value> inputs;
  KernelBuilder::collectInputs(result, ctx.plan, inputs);
  if (quantize)
    KernelBuilder::collectInputs(quantize.getResult(), ctx.plan, inputs);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, inputs.getArrayRef(),
                   ctx.plan, /*workgroupFloats=*/32);
  auto &b = kb.builder();
  Value amaxArg = kb.insertBufferArgument(0, MemRefType::get({1}, b.getI32Type()));
  Value plainArg, transposedArg;
  Type fp8Type;
  if (quantize) {
    auto codes = MemRefType::get({n}, b.getI8Type());
    unsigned position = 1;
    if (layouts.plain)
      plainArg = kb.insertBufferArgument(position++, codes);
    if (transposedValue)
      transposedArg = kb.insertBufferArgument(position++, codes);
    fp8Type = typeOf(quantize.getResult()).getElementType();
  }
  Value scale = quantize ? kb.emit(quantize.getScale(), {}) : Value();
  Value base = arith::MulIOp::create(b, kb.blockIndex(), kb.idx(kAmaxPerBlock));
  auto acc = kb.blockStridedLoop(kAmaxPerBlock, {kb.f32(0.0)}, [&](Value j, llvm::ArrayRef<Value> a) {
    Value i = arith::AddIOp::create(b, base, j);
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(n));
    Value safe = arith::SelectOp::create(b, inRange, i, kb.idx(0));
    auto index = kb.delinearize(safe, shape);
    Value v = kb.emit(x, index);
    if (v.getType().isF64())
      v = arith::TruncFOp::create(b, b.getF32Type(), v);
    Value mag = arith::SelectOp::create(b, inRange, math::AbsFOp::create(b, v), kb.f32(0.0));
    if (quantize)
      kb.ifThen(inRange, [&] {
        // f32(x * scale), then the saturating FP8 rounding: tx.quantize.
        Value code = emitFP8Encode(b, arith::MulFOp::create(b, v, scale), fp8Type);
        if (plainArg)
          memref::StoreOp::create(b, code, plainArg, ValueRange{i});
        if (transposedArg) {
          auto viewShape = typeOf(transposedValue).getShape();
          auto view = viewShape == shape ? index : kb.delinearize(safe, viewShape);
          memref::StoreOp::create(b, code, transposedArg,
                                  ValueRange{transposedLinear(kb, view, viewShape)});
        }
      });
    return llvm::SmallVector<Value>{arith::MaximumFOp::create(b, a[0], mag)};
  });
  emitAtomicAmax(kb, kb.blockReduce(acc[0], /*isMax=*/true), amaxArg);
  kb.finish();
  if (failed(kb.status()))
    return failure();
  llvm::SmallVector<unsigned> outputs{out};
  if (quantize) {
    Value q = quantize.getResult();
    if (layouts.plain)
      outputs.push_back(ctx.bufferFor(q));
    if (layouts.transposedValue) {
      unsigned codes = ctx.scratch(n, "fp8 gemm rhs, transposed");
      ctx.fp8Transposed[layouts.transposedValue] = codes;
      outputs.push_back(codes);
    }
    ctx.loweredElsewhere.insert(quantize);
  }
  ctx.launch(kb, op, ceilDiv(n, kAmaxPerBlock), outputs,
             ctx.buffersOf(inputs.getArrayRef()));
  return success();
}

/// A tx.quantize on its own (current scaling: its scale comes from the amax
/// of the same input). A loop kernel like any materialized elemental value,
/// except that codes an FP8 GEMM reads as rhs are written as [..., N, K].
LogicalResult cuda::lowerQuantize(LoweringContext &ctx, Operation *op) {
  Value q = op->getResult(0);
  if (!ctx.plan.isMaterialized(q))
    return success();
  CodeLayouts layouts = layoutsOf(q);
  Value transposedValue = layouts.transposedValue;
  if (!transposedValue || ctx.bufferOfValue.count(q))
    return lowerElementalValue(ctx, q);
  auto shape = typeOf(q).getShape();
  int64_t n = typeOf(q).getNumElements();
  llvm::SetVector<Value> inputs;
  KernelBuilder::collectInputs(q, ctx.plan, inputs);
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, inputs.getArrayRef(), ctx.plan);
  auto &b = kb.builder();
  auto bytes = MemRefType::get({n}, b.getI8Type());
  Value transposedArg = kb.insertBufferArgument(0, bytes);
  Value plainArg = layouts.plain ? kb.insertBufferArgument(1, bytes) : Value();
  Type fp8Type = typeOf(q).getElementType();
  Value i = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(n));
  kb.ifThen(inRange, [&] {
    auto index = kb.delinearize(i, shape);
    Value code = emitFP8Encode(b, kb.emitComputed(q, index), fp8Type);
    auto viewShape = typeOf(transposedValue).getShape();
    auto view = viewShape == shape ? index : kb.delinearize(i, viewShape);
    memref::StoreOp::create(b, code, transposedArg,
                            ValueRange{transposedLinear(kb, view, viewShape)});
    if (plainArg)
      memref::StoreOp::create(b, code, plainArg, ValueRange{i});
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  unsigned codes = ctx.scratch(n, "fp8 gemm rhs, transposed");
  ctx.fp8Transposed[transposedValue] = codes;
  llvm::SmallVector<unsigned> outputs{codes};
  if (layouts.plain)
    outputs.push_back(ctx.bufferFor(q));
  ctx.launch(kb, op, ceilDiv(n, kBlockSize), outputs,
             ctx.buffersOf(inputs.getArrayRef()));
  return success();
}

/// An FP8 tx.transpose swapping the last two dims of codes in memory (the
/// weight gradient's transposed input codes, read by its GEMM as lhs, where
/// the kernel quantizing them did not write them: transposeOfCodes; a
/// cached weight's [N, K] codes), when they are whole tiles: the tiled
/// transpose of lowerAmaxByThreadRuns, 16-byte runs read and 4-byte runs
/// written through workgroup memory. A block transposes up to
/// kTilesPerTranspose tiles, their loads issued together: with one tile
/// (16 bytes a thread) too few bytes are in flight to reach copy bandwidth.
/// False when it does not apply (the generic loop kernel then copies it).
FailureOr<bool> cuda::lowerFP8Transpose(LoweringContext &ctx, Operation *op) {
  auto transpose = dyn_cast<tx::TransposeOp>(op);
  if (!transpose || !isFP8(typeOf(transpose.getResult()).getElementType()) ||
      !ctx.plan.isMaterialized(transpose.getResult()) ||
      (ctx.bufferOfValue.count(transpose.getResult()) &&
       !ctx.cachedWeightCodes.contains(transpose.getResult())))
    return false;
  if (!tx::swapsLastTwoDims(transpose))
    return false;
  // The codes in memory: the input, or what a chain of reshapes views.
  Value source = transpose.getInput();
  while (!ctx.plan.isMaterialized(source) && source.getDefiningOp<tx::ReshapeOp>())
    source = source.getDefiningOp()->getOperand(0);
  auto view = typeOf(transpose.getInput()).getShape();
  if (!ctx.plan.isMaterialized(source) || !isTileable(view))
    return false;
  int64_t n = typeOf(source).getNumElements();
  int64_t tiles = n / (kTile * kTile), perBlock = kTilesPerTranspose;
  while (tiles % perBlock != 0)
    perBlock /= 2;
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), {}, {}, ctx.plan);
  auto &b = kb.builder();
  Value dst = kb.insertBufferArgument(0, MemRefType::get({n}, b.getI8Type()));
  // The source read as words (the same bytes): its runs go into the
  // workgroup tile as they are, four codes a word.
  Value src = kb.insertBufferArgument(1, MemRefType::get({n / 4}, b.getI32Type()));
  Value words = addTileMemory(kb, perBlock);
  Value firstTile = arith::MulIOp::create(b, kb.blockIndex(), kb.idx(perBlock));
  llvm::SmallVector<Tile> coords;
  llvm::SmallVector<llvm::SmallVector<Value>> runs;
  for (int64_t g = 0; g < perBlock; ++g) {
    coords.emplace_back(kb, view, arith::AddIOp::create(b, firstTile, kb.idx(g)));
    Value firstWord = arith::DivUIOp::create(b, coords.back().firstOfRun(kb), kb.idx(4));
    runs.emplace_back();
    for (int64_t w = 0; w < kRun / 4; ++w)
      runs.back().push_back(memref::LoadOp::create(
          b, src, ValueRange{arith::AddIOp::create(b, firstWord, kb.idx(w))}));
  }
  for (int64_t g = 0; g < perBlock; ++g)
    coords[g].storeRunWords(kb, words, runs[g], g);
  gpu::BarrierOp::create(b);
  for (int64_t g = 0; g < perBlock; ++g)
    coords[g].storeTransposed(kb, words, dst, g);
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, static_cast<unsigned>(tiles / perBlock),
             {ctx.bufferFor(transpose.getResult())}, {ctx.bufferFor(source)});
  return true;
}

//===----------------------------------------------------------------------===//
// Scale updates
//===----------------------------------------------------------------------===//

/// s is the new scale when |amax| is finite and positive, else |keep|;
/// an infinite s becomes the f32 maximum. Returns (scale, 1 / scale).
static std::pair<Value, Value> scaleFromAmax(KernelBuilder &kb, Value amax,
                                             double scaledMax, Value keep) {
  auto &b = kb.builder();
  Value inf = kb.f32(std::numeric_limits<double>::infinity());
  Value positive = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, amax, kb.f32(0.0));
  Value finite = arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, amax, inf);
  Value use = arith::AndIOp::create(b, positive, finite);
  Value s = arith::SelectOp::create(
      b, use, arith::DivFOp::create(b, kb.f32(scaledMax), amax), keep);
  Value isInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                      math::AbsFOp::create(b, s), inf);
  s = arith::SelectOp::create(b, isInf, kb.f32(std::numeric_limits<float>::max()), s);
  return {s, arith::DivFOp::create(b, kb.f32(1.0), s)};
}

/// The largest |amax| the scale maps to: the FP8 maximum over 2^margin.
static double scaledMaxOf(tx::FP8ScaleUpdateOp update) {
  int margin = static_cast<int>(std::min<int64_t>(update.getRecipe().getMargin(), 4096));
  return static_cast<float>(std::ldexp(fp8Max(update.getFp8Type()), -margin));
}

bool cuda::isCarriedScale(Value scale) {
  if (auto site = scale.getDefiningOp<tx::FP8SiteOp>())
    scale = site.getState();
  return isa<BlockArgument>(scale);
}

/// The ops that read |state| (an FP8 scale or history), looking through
/// the site reads of packed state to the kernels and GEMMs that read them.
static llvm::SmallVector<Operation *> stateReaders(Value state) {
  llvm::SmallVector<Operation *> readers;
  for (Operation *user : state.getUsers()) {
    if (isa<tx::FP8SiteOp>(user))
      readers.append(user->getUsers().begin(), user->getUsers().end());
    else
      readers.push_back(user);
  }
  return readers;
}

/// An update whose results only the step returns (the next step's state):
/// it can wait for the end of the step and then update its state in place,
/// since by then every reader of the old history, scale and scale inverse
/// (this step's quantizes and GEMMs) has run.
/// A quantize may read the new scale too (a cached FP8 weight cast for the
/// next step, tx-cache-fp8-weights, through a site of the packed scales):
/// the held-back update then goes out before it (flushFP8ScaleUpdates'
/// |before|).
static bool deferrable(tx::FP8ScaleUpdateOp update) {
  for (Value state : {update.getAmaxHistory(), update.getScale()})
    if (!isa<BlockArgument>(state))
      return false;
  for (Value result : update->getResults())
    for (Operation *user : result.getUsers()) {
      bool quantizeScale = result == update.getNewScale() &&
                           (isa<tx::QuantizeOp>(user) ||
                            (isa<tx::FP8SiteOp>(user) &&
                             llvm::all_of(user->getUsers(), [](Operation *reader) {
                               return isa<tx::QuantizeOp>(reader);
                             })));
      if (!isa<func::ReturnOp>(user) && !quantizeScale)
        return false;
    }
  return true;
}

bool cuda::readsDeferredScaleUpdates(LoweringContext &ctx, Operation &op) {
  if (ctx.deferredScaleUpdates.empty())
    return false;
  // An amax kernel computes its fused quantize, which reads the scale.
  llvm::SmallVector<Operation *, 4> readers{&op};
  if (auto amax = dyn_cast<tx::AmaxOp>(op))
    for (Operation *user : amax.getInput().getUsers())
      if (isa<tx::QuantizeOp>(user))
        readers.push_back(user);
  for (Operation *reader : readers)
    for (Value operand : reader->getOperands()) {
      if (auto site = operand.getDefiningOp<tx::FP8SiteOp>())
        operand = site.getState();
      if (auto update = operand.getDefiningOp<tx::FP8ScaleUpdateOp>())
        if (llvm::is_contained(ctx.deferredScaleUpdates, update.getOperation()))
          return true;
    }
  return false;
}

/// The argument |result| is returned as the next value of, if any.
static Value nextStateArgument(Value result) {
  for (OpOperand &use : result.getUses()) {
    auto ret = dyn_cast<func::ReturnOp>(use.getOwner());
    auto func = ret ? dyn_cast<func::FuncOp>(ret->getParentOp()) : nullptr;
    auto next = func ? func.getResultAttrOfType<IntegerAttr>(use.getOperandNumber(), tx::kNextAttrName)
                     : IntegerAttr();
    if (next && next.getInt() >= 0 && next.getInt() < func.getNumArguments())
      return func.getArgument(next.getInt());
  }
  return {};
}

/// The stored f32 amax of each site when the update's amax is the
/// concatenation tx-insert-fp8 builds (a reshape of each site's amax: a
/// tx.amax result or a cached weight's amax argument), in row order; empty
/// otherwise (a data-parallel step's all-reduced vector, a single site).
static llvm::SmallVector<Value> storedSiteAmaxes(LoweringContext &ctx, Value amax) {
  auto concat = amax.getDefiningOp<tx::ConcatOp>();
  if (!concat || ctx.plan.isMaterialized(amax))
    return {};
  llvm::SmallVector<Value> sites;
  for (Value part : concat.getInputs()) {
    while (auto reshape = part.getDefiningOp<tx::ReshapeOp>()) {
      if (ctx.plan.isMaterialized(part))
        break;
      part = reshape.getInput();
    }
    bool stored = isa<BlockArgument>(part) || ctx.plan.isMaterialized(part);
    if (!stored || typeOf(part).getNumElements() != 1 ||
        !typeOf(part).getElementType().isF32())
      return {};
    sites.push_back(part);
  }
  return sites;
}

namespace {
/// One update of a tx.fp8_scale_updates launch: its first row, its rows,
/// and where its amaxes come from: the sites' own, each in a slot of its
/// own, reached through one offset table shared by the launch (one kernel
/// argument for any number of sites: one pointer per site would outgrow
/// the 4 KB of kernel parameters PTX 8.0 allows past ~500 sites), from
/// table word |firstWord| on; or (|firstWord| = -1) one stored vector
/// (all-reduced across ranks), or whatever else the IR computes, emitted
/// in the kernel.
struct ScaleUpdatePart {
  tx::FP8ScaleUpdateOp update;
  int64_t firstRow = 0, rows = 0, firstWord = -1;
};

/// What the launch of several scale updates reads and writes: every
/// update's outputs, the values it reads through kernel arguments, the
/// site amaxes' offset table if any, and the rows in all.
struct ScaleUpdateLaunch {
  llvm::SmallVector<ScaleUpdatePart> parts;
  llvm::SmallVector<Value> outputs;
  llvm::SetVector<Value> inputs;
  std::optional<LoweringContext::OffsetTable> table;
  int64_t rows = 0;
};
} // namespace

/// The parts, outputs and inputs of the launch of |updates| (see
/// ScaleUpdatePart); fails if an update would read too many amaxes through
/// kernel arguments.
static LogicalResult planScaleUpdateLaunch(LoweringContext &ctx,
                                           llvm::ArrayRef<tx::FP8ScaleUpdateOp> updates,
                                           bool inPlace, ScaleUpdateLaunch &launch) {
  std::optional<LoweringContext::OffsetTable> &table = launch.table;
  llvm::SetVector<Value> &inputs = launch.inputs;
  for (tx::FP8ScaleUpdateOp update : updates) {
    ScaleUpdatePart part{update, launch.rows,
                         std::max<int64_t>(typeOf(update.getScale()).getNumElements(), 1)};
    launch.rows += part.rows;
    // Out of place, the scale too: a quantize may read a site of the old
    // scales after the update (tx-insert-fp8 puts the update right after
    // the last amax, before that amax's quantize).
    launch.outputs.append(
        {update.getNewAmaxHistory(), update.getNewScale(), update.getNewScaleInv()});
    llvm::SmallVector<Value> siteAmaxes = storedSiteAmaxes(ctx, update.getAmax());
    if (!siteAmaxes.empty()) {
      if (!table)
        table.emplace();
      part.firstWord = static_cast<int64_t>(table->words.size());
      for (Value site : siteAmaxes) {
        table->offsetOf.push_back({table->words.size(), ctx.bufferFor(site)});
        table->words.push_back(0);
      }
    } else {
      size_t before = inputs.size();
      KernelBuilder::collectReadsOf(update.getAmax(), ctx.plan, inputs);
      // One pointer per stored amax: past a few hundred the kernel's
      // parameters outgrow what PTX allows; say so here, not in ptxas.
      if (inputs.size() - before > 256)
        return update.emitError("the FP8 scale update would read ")
               << inputs.size() - before
               << " amaxes through kernel arguments (its sites' amaxes are not each one "
                  "stored f32, so the offset table does not apply)";
    }
    launch.parts.push_back(part);
  }
  if (!inPlace)
    for (tx::FP8ScaleUpdateOp update : updates)
      for (Value state : {update.getAmaxHistory(), update.getScale()})
        inputs.insert(state);
  return success();
}

/// The newest amax of |part|'s row |row|: read through the offset table
/// (|offsets| its words, |tableArg| the bytes they point into) or emitted.
static Value loadLatestAmax(KernelBuilder &kb, const ScaleUpdatePart &part, Value row,
                            Value offsets, Value tableArg) {
  auto &b = kb.builder();
  tx::FP8ScaleUpdateOp update = part.update; // (op accessors are not const)
  if (part.firstWord < 0)
    return kb.emit(update.getAmax(), {row});
  Value word = arith::AddIOp::create(b, row, kb.idx(part.firstWord));
  Value offset = arith::IndexCastOp::create(
      b, b.getIndexType(), memref::LoadOp::create(b, offsets, ValueRange{word}));
  Value cell = memref::ViewOp::create(b, MemRefType::get({1}, b.getF32Type()), tableArg,
                                      offset, ValueRange{});
  return memref::LoadOp::create(b, cell, ValueRange{kb.idx(0)});
}

/// Rolls the history of |part|'s row |row| (newest first), takes its
/// NaN-skipping max, and has thread 0 derive the row's scale and scale
/// inverse (see emitScaleUpdates for |inPlace|).
static void emitScaleUpdateRow(KernelBuilder &kb, const ScaleUpdatePart &part, Value row,
                               bool inPlace, Value offsets, Value tableArg) {
  auto &b = kb.builder();
  tx::FP8ScaleUpdateOp update = part.update; // (op accessors are not const)
  Value history = update.getAmaxHistory(), scale = update.getScale();
  Value newHistory = update.getNewAmaxHistory();
  Value newScale = update.getNewScale(), newScaleInv = update.getNewScaleInv();
  bool windowMax = update.getRecipe().getAmaxCompute() == tx::AmaxCompute::max;
  int64_t length = typeOf(history).getShape().back();
  Value historyIn = inPlace ? newHistory : history;
  Value scaleIn = inPlace ? newScale : scale;
  Value rowStart = arith::MulIOp::create(b, row, kb.idx(length));
  Value latest = loadLatestAmax(kb, part, row, offsets, tableArg);
  llvm::SmallVector<Value> entries, values;
  Value window = kb.f32(0.0);
  for (int64_t first = 0; first < length; first += kBlockSize) {
    Value j = arith::AddIOp::create(b, kb.threadIndex(), kb.idx(first));
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, kb.idx(length));
    Value isFirst = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, j, kb.idx(0));
    Value readable = arith::AndIOp::create(
        b, inRange, arith::XOrIOp::create(b, isFirst, arith::ConstantIntOp::create(b, 1, 1)));
    Value previous = arith::SelectOp::create(
        b, readable, arith::SubIOp::create(b, j, kb.idx(1)), kb.idx(0));
    Value old = kb.load(historyIn, arith::AddIOp::create(b, rowStart, previous));
    Value v = arith::SelectOp::create(b, isFirst, latest, old);
    window = arith::SelectOp::create(b, inRange, arith::MaxNumFOp::create(b, window, v), window);
    entries.push_back(j);
    values.push_back(v);
  }
  if (inPlace)
    gpu::BarrierOp::create(b);
  for (auto [j, v] : llvm::zip(entries, values))
    kb.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, kb.idx(length)),
              [&, j = j, v = v] {
                kb.store(newHistory, arith::AddIOp::create(b, rowStart, j), v);
              });
  Value windowAmax = windowMax ? kb.blockReduce(window, /*isMax=*/true) : latest;
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(), kb.idx(0));
  kb.ifThen(first, [&] {
    auto [s, inv] = scaleFromAmax(kb, windowAmax, scaledMaxOf(update), kb.load(scaleIn, row));
    kb.store(newScale, row, s);
    kb.store(newScaleInv, row, inv);
  });
}

/// Launches |kb|, the kernel of |launch|, for |updates| (the first is
/// |op|), with the offset table's slots as the launch's indirect reads.
static void launchScaleUpdates(LoweringContext &ctx, KernelBuilder &kb, Operation *op,
                               llvm::ArrayRef<tx::FP8ScaleUpdateOp> updates,
                               ScaleUpdateLaunch &launch) {
  llvm::SmallVector<unsigned> inputSlots;
  std::vector<unsigned> through;
  if (launch.table) {
    // Every join first (see buildPackedTable), then the live ranges.
    llvm::SmallVector<unsigned> all;
    for (auto [word, slot] : launch.table->offsetOf)
      all.push_back(slot);
    ctx.awaitCollectivesTouching(all);
    for (auto [word, slot] : launch.table->offsetOf) {
      through.push_back(slot);
      ctx.touch(slot); // live at the launch appended next
    }
    inputSlots.push_back(ctx.offsetTable(std::move(*launch.table), "fp8 site amax offsets"));
  }
  for (unsigned slot : ctx.buffersOf(launch.inputs.getArrayRef()))
    inputSlots.push_back(slot);
  ctx.launch(kb, op, static_cast<unsigned>(launch.rows), ctx.buffersOf(launch.outputs),
             inputSlots);
  Command &command = ctx.program.commands.back();
  if (!through.empty())
    std::get<LaunchCmd>(command.op).through = std::move(through);
  // Named after every update it runs ("... at 'fp8.e4m3' + 'fp8.e5m2'").
  for (tx::FP8ScaleUpdateOp update : updates.drop_front())
    command.origin += " + " + reference::describeLocation(update.getLoc());
}

/// The kernel of tx.fp8_scale_updates over R rows in all (R = 1 for a
/// single history [L]), one launch: the updates' rows follow each other
/// (block r belongs to the update whose rows hold r). Block r rolls its
/// row's history (newest first) and takes its NaN-skipping max (maxnum
/// from 0, so max(0, maxNum(...))); thread 0 derives the row's scale and
/// scale inverse. Bit-exact: f32 divisions are correctly rounded (the
/// serializer asks NVPTX for IEEE division).
///
/// |inPlace|: the results share the state arguments' buffers. Each thread
/// then first reads the entries it will write (entry j takes old entry
/// j - 1, entry 0 the new amax) into registers, then a barrier, then the
/// writes, so the history rolls in place. Otherwise the old state is read
/// from its buffers and the new one written to buffers of its own.
static LogicalResult emitScaleUpdates(LoweringContext &ctx,
                                      llvm::ArrayRef<tx::FP8ScaleUpdateOp> updates,
                                      bool inPlace) {
  Operation *op = tx::FP8ScaleUpdateOp(updates.front()).getOperation();
  ScaleUpdateLaunch launch;
  if (failed(planScaleUpdateLaunch(ctx, updates, inPlace, launch)))
    return failure();
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), launch.outputs,
                   launch.inputs.getArrayRef(), ctx.plan, /*workgroupFloats=*/32);
  auto &b = kb.builder();
  Value offsets;
  Value tableArg;
  if (launch.table) {
    // Word w: the byte offset of a site's amax from the table's start.
    int64_t words = static_cast<int64_t>(launch.table->words.size());
    tableArg = kb.insertBufferArgument(launch.outputs.size(),
                                       MemRefType::get({words * 8}, b.getI8Type()));
    offsets = memref::ViewOp::create(b, MemRefType::get({words}, b.getI64Type()), tableArg,
                                     kb.idx(0), ValueRange{});
  }
  Value block = kb.blockIndex();
  if (launch.parts.size() == 1) {
    emitScaleUpdateRow(kb, launch.parts.front(), block, inPlace, offsets, tableArg);
  } else {
    // The condition is uniform over a block, so the barriers inside agree.
    for (const ScaleUpdatePart &part : launch.parts) {
      Value inPart = arith::AndIOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::uge, block, kb.idx(part.firstRow)),
          arith::CmpIOp::create(b, arith::CmpIPredicate::ult, block,
                                kb.idx(part.firstRow + part.rows)));
      kb.ifThen(inPart, [&] {
        emitScaleUpdateRow(kb, part, arith::SubIOp::create(b, block, kb.idx(part.firstRow)),
                           inPlace, offsets, tableArg);
      });
    }
  }
  kb.finish();
  if (failed(kb.status()))
    return failure();
  launchScaleUpdates(ctx, kb, op, updates, launch);
  return success();
}

/// tx.fp8_scale_update: one launch, a block per row (site). An update
/// whose results only the step returns waits for the end of the step
/// (flushFP8ScaleUpdates) and updates its state in place; any other runs
/// here, its history rolled into a new buffer.
LogicalResult cuda::lowerFP8ScaleUpdate(LoweringContext &ctx, Operation *op) {
  auto update = cast<tx::FP8ScaleUpdateOp>(op);
  Value history = update.getAmaxHistory(), scale = update.getScale();
  Value newHistory = update.getNewAmaxHistory();
  Value newScale = update.getNewScale(), newScaleInv = update.getNewScaleInv();
  Value scaleInv = nextStateArgument(newScaleInv);
  if (deferrable(update) && scaleInv && nextStateArgument(newHistory) == history &&
      nextStateArgument(newScale) == scale && !ctx.bufferOfValue.count(newHistory) &&
      !ctx.bufferOfValue.count(newScale) && !ctx.bufferOfValue.count(newScaleInv)) {
    ctx.bufferOfValue[newHistory] = ctx.bufferFor(history);
    ctx.bufferOfValue[newScale] = ctx.bufferFor(scale);
    ctx.bufferOfValue[newScaleInv] = ctx.bufferFor(scaleInv);
    ctx.deferredScaleUpdates.push_back(op);
    return success();
  }
  return emitScaleUpdates(ctx, {update}, /*inPlace=*/false);
}

/// The updates lowerFP8ScaleUpdate held back, in place, all in one launch.
LogicalResult cuda::flushFP8ScaleUpdates(LoweringContext &ctx, Operation *before) {
  std::vector<Operation *> pending;
  std::swap(pending, ctx.deferredScaleUpdates);
  llvm::SmallVector<tx::FP8ScaleUpdateOp> ready;
  for (Operation *op : pending) {
    auto update = cast<tx::FP8ScaleUpdateOp>(op);
    // Before |before| (not the end): an update whose old state something at
    // or after |before| still reads keeps waiting.
    if (before) {
      Value scaleInv = nextStateArgument(update.getNewScaleInv());
      bool readLater = false;
      for (Value state : {Value(update.getAmaxHistory()), Value(update.getScale()), scaleInv})
        for (Operation *reader : stateReaders(state))
          if (reader != op && !reader->isBeforeInBlock(before))
            readLater = true;
      if (readLater) {
        ctx.deferredScaleUpdates.push_back(op);
        continue;
      }
    }
    ready.push_back(update);
  }
  // Every update ready here in one launch (an fp8 step's E4M3 and E5M2
  // states at its end).
  if (ready.empty())
    return success();
  return emitScaleUpdates(ctx, ready, /*inPlace=*/true);
}

/// tx.fp8_current_scale: one thread; 1 for an amax of 0, inf or NaN.
LogicalResult cuda::lowerFP8CurrentScale(LoweringContext &ctx, Operation *op) {
  auto current = cast<tx::FP8CurrentScaleOp>(op);
  Value amax = current.getAmax();
  llvm::SmallVector<Value> outputs{current.getScale(), current.getScaleInv()};
  KernelBuilder kb(ctx.gpuModule, ctx.kernelName(op), outputs, {amax}, ctx.plan);
  auto &b = kb.builder();
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, kb.threadIndex(), kb.idx(0));
  kb.ifThen(first, [&] {
    auto [s, inv] = scaleFromAmax(kb, kb.load(amax, kb.idx(0)),
                                  fp8Max(current.getFp8Type()), kb.f32(1.0));
    kb.store(outputs[0], kb.idx(0), s);
    kb.store(outputs[1], kb.idx(0), inv);
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, 1, ctx.buffersOf(outputs), ctx.buffersOf({amax}));
  return success();
}

//===----------------------------------------------------------------------===//
// FP8 GEMMs (tx.blas_gemm of FP8 codes)
//===----------------------------------------------------------------------===//

/// A loop kernel copying the FP8 bytes of |rhs| ([..., K, N]) transposed
/// into |dst| ([..., N, K]).
static LogicalResult transposeRhs(LoweringContext &ctx, Operation *op, Value rhs,
                                  unsigned dst) {
  auto shape = typeOf(rhs).getShape();
  int64_t count = typeOf(rhs).getNumElements();
  int64_t k = shape[shape.size() - 2], n = shape.back();
  KernelBuilder kb(ctx.gpuModule, "k" + std::to_string(ctx.builtKernels++) + "_fp8_transpose_b", {}, {}, ctx.plan);
  auto &b = kb.builder();
  auto bytes = MemRefType::get({count}, b.getI8Type());
  Value outArg = kb.insertBufferArgument(0, bytes);
  Value inArg = kb.insertBufferArgument(1, bytes);
  Value i = kb.globalThreadIndex();
  Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(count));
  kb.ifThen(inRange, [&] {
    // i = (batch, n', k') in [..., N, K]; the source is (batch, k', n').
    auto index = kb.delinearize(i, {count / (k * n), n, k});
    Value source = kb.linearize({index[0], index[2], index[1]}, {count / (k * n), k, n});
    Value byte = memref::LoadOp::create(b, inArg, ValueRange{source});
    memref::StoreOp::create(b, byte, outArg, ValueRange{i});
  });
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, op, ceilDiv(count, kBlockSize), {dst}, {ctx.bufferFor(rhs)});
  return success();
}

/// The library calls that read FP8 scales through sites of packed state
/// (librarySiteSlot): FP8 GEMMs (their operands' scale inverses) and FP8
/// attention (scales and scale inverses).
static bool readsScalesInLibrary(Operation *op) {
  if (auto mm = dyn_cast<tx::BlasGemmOp>(op))
    return mm.isFP8();
  return isa<tx::FP8AttentionOp, tx::FP8AttentionGradOp>(op);
}

/// Spreads packed scale states into the 256-byte parts of one block, one
/// launch (librarySiteSlot says why): |state|, and with it every other
/// packed state a library call of the function reads that is a step
/// argument. Nothing writes such a state before the step's last library
/// call (its update runs in place at the end, flushFP8ScaleUpdates, or out
/// of place), so its entries now are the ones those later calls would
/// read, and an fp8 step spreads its E4M3 and E5M2 states (and, with FP8
/// attention, their scales) in one launch, not one per state.
static LogicalResult spreadScaleStates(LoweringContext &ctx, Operation *origin, Value state) {
  llvm::SmallVector<Value> states{state};
  auto func = origin->getParentOfType<func::FuncOp>();
  if (isa<BlockArgument>(state) && func)
    func.walk([&](Operation *call) {
      if (!readsScalesInLibrary(call))
        return;
      for (Value operand : call->getOperands()) {
        auto site = operand.getDefiningOp<tx::FP8SiteOp>();
        if (!site)
          continue;
        auto arg = dyn_cast<BlockArgument>(site.getState());
        if (arg && arg.getOwner() == &func.getBody().front() &&
            !ctx.spreadScaleBlocks.count(arg) && !llvm::is_contained(states, arg))
          states.push_back(arg);
      }
    });
  constexpr int64_t kStride = kSlotAlignment / sizeof(float);
  int64_t parts = 0;
  llvm::SmallVector<int64_t> firstParts;
  for (Value s : states) {
    firstParts.push_back(parts);
    parts += typeOf(s).getNumElements();
  }
  unsigned block = ctx.scratch(parts * kSlotAlignment, "fp8 scales spread for the library calls");
  KernelBuilder kb(ctx.gpuModule, "k" + std::to_string(ctx.builtKernels++) + "_fp8_spread_scales",
                   {}, states, ctx.plan);
  auto &b = kb.builder();
  Value out = kb.insertBufferArgument(0, MemRefType::get({parts * kStride}, b.getF32Type()));
  Value i = kb.globalThreadIndex();
  int64_t widest = 0;
  for (auto [s, first] : llvm::zip_equal(states, firstParts)) {
    int64_t sites = typeOf(s).getNumElements();
    widest = std::max(widest, sites);
    kb.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, kb.idx(sites)), [&] {
      Value at = arith::MulIOp::create(b, arith::AddIOp::create(b, i, kb.idx(first)),
                                       kb.idx(kStride));
      memref::StoreOp::create(b, kb.load(s, i), out, ValueRange{at});
    });
  }
  kb.finish();
  if (failed(kb.status()))
    return failure();
  ctx.launch(kb, origin, ceilDiv(widest, kBlockSize), {block}, ctx.buffersOf(states));
  for (auto [s, first] : llvm::zip_equal(states, firstParts))
    ctx.spreadScaleBlocks[s] = {block, first};
  return success();
}

/// The slot a library call reads scale |scale| from. cuBLASLt refuses a
/// scale pointer that is only 4-byte aligned (CUBLAS_STATUS_NOT_SUPPORTED
/// on the H200, cuBLASLt 13.1), which a site of packed state is (its 4-byte
/// part of the state's slot), and cuDNN assumes 16-byte aligned tensors
/// unless told otherwise: the first call that reads a packed state's site
/// spreads its entries (spreadScaleStates) into 256-byte parts of a block,
/// and the calls read those.
FailureOr<unsigned> cuda::librarySiteSlot(LoweringContext &ctx, Operation *origin,
                                          Value scale) {
  auto site = scale.getDefiningOp<tx::FP8SiteOp>();
  if (!site)
    return ctx.bufferFor(scale);
  Value state = site.getState();
  if (!ctx.spreadScaleBlocks.count(state) && failed(spreadScaleStates(ctx, origin, state)))
    return failure();
  LoweringContext::SpreadScales spread = ctx.spreadScaleBlocks.lookup(state);
  auto [part, made] =
      ctx.spreadScaleParts.try_emplace({state, static_cast<int64_t>(site.getIndex())}, 0);
  if (made) {
    part->second = ctx.part(spread.block,
                            (spread.firstPart + site.getIndex()) * kSlotAlignment,
                            sizeof(float), "fp8 scale for a library call");
    // The plan names the entry each spread slot copies.
    std::string stateName = "?";
    if (auto arg = dyn_cast<BlockArgument>(state))
      if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
        if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tx::kNameAttrName))
          stateName = name.str();
    ctx.program.scalarSources[part->second] =
        stateName + "[" + std::to_string(site.getIndex()) + "]";
  }
  return part->second;
}

/// An FP8 tx.blas_gemm as one cuBLASLt FP8 GEMM. cuBLASLt's FP8 kernels take
/// only the "TN" form: its A transposed, its B not, both K-contiguous. In
/// row-major terms (lowerBlasGemm, GemmLowering.cpp) its B is our `a`
/// [..., M, K], already K-contiguous, and its A our `b`, which it must read
/// as [..., N, K]: stored so (`transpose_b`: the backward reading the
/// forward's codes transposed), or written that way by the quantize
/// kernel, else transposed by a byte-copy kernel. The scale inverses go to
/// the A/B scale pointers (device f32 scalars), D is bf16/f16/f32, so no D
/// scale or D amax.
LogicalResult cuda::lowerFP8Gemm(LoweringContext &ctx, tx::BlasGemmOp mm) {
  Operation *op = mm.getOperation();
  if (mm.getTransposeA() || mm.getAlpha().convertToFloat() != 1.0f)
    return op->emitError("the GPU FP8 GEMM takes neither a transposed a nor alpha");
  Value lhs = mm.getA(), rhs = mm.getB(), result = mm.getResult();
  bool rhsStoredTransposed = mm.getTransposeB();
  auto lt = typeOf(lhs), rt = typeOf(rhs);
  auto lhsType = dtypeOf(lt.getElementType()), rhsType = dtypeOf(rt.getElementType());
  if (*lhsType == DType::F8E5M2 && *rhsType == DType::F8E5M2)
    return op->emitError("cuBLASLt has no f8E5M2 x f8E5M2 GEMM");
  int64_t M = lt.getShape()[lt.getRank() - 2], K = lt.getShape().back();
  int64_t N = rt.getShape()[rt.getRank() - (rhsStoredTransposed ? 2 : 1)];
  auto lhsBatch = lt.getShape().drop_back(2), rhsBatch = rt.getShape().drop_back(2);
  auto product = [](llvm::ArrayRef<int64_t> s) {
    int64_t p = 1;
    for (int64_t d : s)
      p *= d;
    return p;
  };
  int64_t lhsCount = product(lhsBatch), rhsCount = product(rhsBatch);
  GemmCmd g;
  g.aType = *rhsType;
  g.bType = *lhsType;
  g.dType = *dtypeOf(typeOf(result).getElementType());
  g.m = N;
  g.n = M;
  g.k = K;
  g.transA = true;
  g.lda = K;
  g.transB = false;
  g.ldb = K;
  g.ldd = N;
  if (rhsCount == 1) {
    // One rhs for every batch: the lhs rows are contiguous, fold them into M.
    g.n = M * lhsCount;
  } else if (lhsCount == 1 || lhsBatch == rhsBatch) {
    g.batch = std::max(lhsCount, rhsCount);
    g.strideA = N * K;
    g.strideB = lhsCount == 1 ? 0 : M * K;
    g.strideD = M * N;
  } else {
    return op->emitError("the GPU FP8 GEMM does not broadcast batch dims of ")
           << lt << " against " << rt;
  }
  auto known = ctx.fp8Transposed.find(rhs);
  unsigned rhsT;
  if (rhsStoredTransposed) {
    // b is stored [..., N, K] (a transpose the normal form folded).
    rhsT = ctx.bufferFor(rhs);
  } else if (known != ctx.fp8Transposed.end()) {
    rhsT = known->second;
  } else {
    rhsT = ctx.scratch(rt.getNumElements(), "fp8 gemm rhs, transposed");
    if (failed(transposeRhs(ctx, op, rhs, rhsT)))
      return failure();
  }
  g.a = rhsT;
  g.b = ctx.bufferFor(lhs);
  g.d = ctx.bufferFor(result);
  FailureOr<unsigned> aScale = librarySiteSlot(ctx, op, mm.getBScaleInv());
  FailureOr<unsigned> bScale = librarySiteSlot(ctx, op, mm.getAScaleInv());
  if (failed(aScale) || failed(bScale))
    return failure();
  g.aScale = static_cast<int>(*aScale);
  g.bScale = static_cast<int>(*bScale);
  g.fastAccumulation = mm.getFastAccumulation();
  // A c only as cuBLASLt's bias (tx-gemm-bias: a row vector, beta 1, of
  // the bf16/f16 result's type).
  if (mm.getC()) {
    // cuBLASLt's FP8 bias has D's type only for a bf16 or f16 D (an f32 D
    // would take a bf16 bias: another layout than the IR's c).
    std::optional<unsigned> bias;
    if (g.dType == DType::BF16 || g.dType == DType::F16)
      bias = epilogueBiasSlot(ctx, mm, g);
    if (!bias)
      return op->emitError("the GPU FP8 GEMM takes a c only as a bias: a 16-byte aligned row "
                           "vector added with beta 1 to one matrix with a bf16 or f16 result");
    g.bias = static_cast<int>(*bias);
  }
  return ctx.gemm(g, op);
}
