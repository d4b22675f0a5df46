//===- ElementwiseOps.cpp - broadcasting and unary ops --------------------===//
//
// SPDX-License-Identifier: Apache-2.0
// Arithmetic, max / min, comparisons, where, float math, cast and dropout.
// Float ops compute in double (one rounding by the executor afterwards: for
// f32 +, -, *, / and sqrt that is exactly IEEE f32 arithmetic); integer ops
// compute in int64 with two's-complement wrapping, then wrap to the element
// width.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "txopt/Dialect/Tx/IR/TxOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::reference;

namespace {

int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

/// Applies |floatFn| (double, double) -> double or |intFn| (int64, int64) ->
/// Expected<int64> elementwise after broadcasting. The operands' storage
/// picks the function; the result has the op's result type, whose storage
/// kind may differ (comparisons produce i1).
template <typename FloatFn, typename IntFn>
llvm::Expected<Tensor> broadcastBinary(Operation *op, const Tensor &lhs,
                                       const Tensor &rhs, FloatFn floatFn,
                                       IntFn intFn) {
  Tensor result = makeResult(op);
  std::vector<int64_t> li = broadcastIndices(lhs.getShape(), result.getShape());
  std::vector<int64_t> ri = broadcastIndices(rhs.getShape(), result.getShape());
  int64_t n = result.getNumElements();
  for (int64_t i = 0; i < n; ++i) {
    if (lhs.isFloat()) {
      double v = floatFn(lhs.floats()[li[i]], rhs.getDouble(ri[i]));
      if (result.isFloat())
        result.floats()[i] = v;
      else
        result.ints()[i] = static_cast<int64_t>(v);
    } else {
      llvm::Expected<int64_t> v = intFn(lhs.ints()[li[i]], rhs, ri[i]);
      if (!v)
        return v.takeError();
      result.ints()[i] = *v;
    }
  }
  return result;
}

llvm::Error divisionByZero() {
  return llvm::createStringError("integer division by zero");
}

/// Integer power with wrapping; negative exponents truncate like C's pow.
int64_t intPow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    double v = std::pow(static_cast<double>(base), static_cast<double>(exponent));
    return static_cast<int64_t>(v);
  }
  int64_t result = 1;
  while (exponent) {
    if (exponent & 1)
      result = wrapMul(result, base);
    base = wrapMul(base, base);
    exponent >>= 1;
  }
  return result;
}

/// Add, sub, mul, div, pow, mod, max, min: integers wrap, division by zero
/// is an error.
llvm::Expected<Tensor> evalArithmeticBinary(Operation *op, const Tensor &lhs,
                                            const Tensor &rhs) {
  using Ret = llvm::Expected<int64_t>;
  auto intOf = [](const Tensor &t, int64_t i) { return t.ints()[i]; };
  return llvm::TypeSwitch<Operation *, llvm::Expected<Tensor>>(op)
      .Case([&](tx::AddOp) {
        return broadcastBinary(op, lhs, rhs, [](double a, double b) { return a + b; },
                               [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
                                 return wrapAdd(a, intOf(t, i));
                               });
      })
      .Case([&](tx::SubOp) {
        return broadcastBinary(op, lhs, rhs, [](double a, double b) { return a - b; },
                               [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
                                 return wrapSub(a, intOf(t, i));
                               });
      })
      .Case([&](tx::MulOp) {
        return broadcastBinary(op, lhs, rhs, [](double a, double b) { return a * b; },
                               [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
                                 return wrapMul(a, intOf(t, i));
                               });
      })
      .Case([&](tx::DivOp) {
        // Integer division truncates toward zero (C, onnxruntime).
        return broadcastBinary(op, lhs, rhs, [](double a, double b) { return a / b; },
                               [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
                                 int64_t b = intOf(t, i);
                                 if (b == 0)
                                   return divisionByZero();
                                 if (b == -1)
                                   return wrapSub(0, a);
                                 return a / b;
                               });
      })
      .Case([&](tx::PowOp) {
        // The exponent may have another numeric type than the base.
        return broadcastBinary(
            op, lhs, rhs, [](double a, double b) { return std::pow(a, b); },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              if (t.isFloat())
                return static_cast<int64_t>(std::pow(static_cast<double>(a),
                                                     t.floats()[i]));
              return intPow(a, t.ints()[i]);
            });
      })
      .Case([&](tx::ModOp mod) {
        bool fmod = mod.getFmod();
        return broadcastBinary(
            op, lhs, rhs, [](double a, double b) { return std::fmod(a, b); },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              int64_t b = intOf(t, i);
              if (b == 0)
                return divisionByZero();
              if (b == -1)
                return int64_t(0);
              int64_t r = a % b; // sign of the dividend (C fmod)
              if (!fmod && r != 0 && ((r < 0) != (b < 0)))
                r += b; // sign of the divisor (Python %)
              return r;
            });
      })
      .Case([&](tx::MaxOp) {
        // NaN propagates, as in onnxruntime (a plain comparison would keep
        // whichever operand the NaN is not).
        return broadcastBinary(
            op, lhs, rhs,
            [](double a, double b) {
              return std::isnan(a) || std::isnan(b) ? std::nan("") : (a > b ? a : b);
            },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              return std::max(a, intOf(t, i));
            });
      })
      .Case([&](tx::MinOp) {
        return broadcastBinary(
            op, lhs, rhs,
            [](double a, double b) {
              return std::isnan(a) || std::isnan(b) ? std::nan("") : (a < b ? a : b);
            },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              return std::min(a, intOf(t, i));
            });
      })
      .Default([](Operation *) -> llvm::Expected<Tensor> {
        return llvm::createStringError("not a binary op");
      });
}

/// Comparisons and logic: 1 where the predicate holds, 0 elsewhere.
llvm::Expected<Tensor> evalPredicateBinary(Operation *op, const Tensor &lhs,
                                           const Tensor &rhs) {
  using Ret = llvm::Expected<int64_t>;
  auto intOf = [](const Tensor &t, int64_t i) { return t.ints()[i]; };
  return llvm::TypeSwitch<Operation *, llvm::Expected<Tensor>>(op)
      .Case([&](tx::EqualOp) {
        return broadcastBinary(
            op, lhs, rhs, [](double a, double b) { return a == b ? 1.0 : 0.0; },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              return a == intOf(t, i) ? 1 : 0;
            });
      })
      .Case([&](tx::GreaterOrEqualOp) {
        return broadcastBinary(
            op, lhs, rhs, [](double a, double b) { return a >= b ? 1.0 : 0.0; },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              return a >= intOf(t, i) ? 1 : 0;
            });
      })
      .Case([&](tx::LessOp) {
        return broadcastBinary(
            op, lhs, rhs, [](double a, double b) { return a < b ? 1.0 : 0.0; },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              return a < intOf(t, i) ? 1 : 0;
            });
      })
      .Case([&](tx::LessOrEqualOp) {
        return broadcastBinary(
            op, lhs, rhs, [](double a, double b) { return a <= b ? 1.0 : 0.0; },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              return a <= intOf(t, i) ? 1 : 0;
            });
      })
      .Case([&](tx::GreaterOp) {
        return broadcastBinary(
            op, lhs, rhs, [](double a, double b) { return a > b ? 1.0 : 0.0; },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              return a > intOf(t, i) ? 1 : 0;
            });
      })
      .Case([&](tx::AndOp) {
        return broadcastBinary(
            op, lhs, rhs, [](double a, double b) { return (a != 0 && b != 0) ? 1.0 : 0.0; },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              return (a != 0 && intOf(t, i) != 0) ? 1 : 0;
            });
      })
      .Case([&](tx::OrOp) {
        return broadcastBinary(
            op, lhs, rhs, [](double a, double b) { return (a != 0 || b != 0) ? 1.0 : 0.0; },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              return (a != 0 || intOf(t, i) != 0) ? 1 : 0;
            });
      })
      .Case([&](tx::XorOp) {
        return broadcastBinary(
            op, lhs, rhs, [](double a, double b) { return ((a != 0) != (b != 0)) ? 1.0 : 0.0; },
            [&](int64_t a, const Tensor &t, int64_t i) -> Ret {
              return ((a != 0) != (intOf(t, i) != 0)) ? 1 : 0;
            });
      })
      .Default([](Operation *) -> llvm::Expected<Tensor> {
        return llvm::createStringError("not a binary op");
      });
}

llvm::Expected<Tensor> evalBinary(Operation *op, const Tensor &lhs,
                                  const Tensor &rhs) {
  if (isa<tx::AddOp, tx::SubOp, tx::MulOp, tx::DivOp, tx::PowOp, tx::ModOp, tx::MaxOp,
          tx::MinOp>(op))
    return evalArithmeticBinary(op, lhs, rhs);
  return evalPredicateBinary(op, lhs, rhs);
}

Tensor evalWhere(Operation *op, const Tensor &cond, const Tensor &lhs,
                 const Tensor &rhs) {
  Tensor result = makeResult(op);
  auto out = result.getShape();
  std::vector<int64_t> ci = broadcastIndices(cond.getShape(), out);
  std::vector<int64_t> li = broadcastIndices(lhs.getShape(), out);
  std::vector<int64_t> ri = broadcastIndices(rhs.getShape(), out);
  for (int64_t i = 0, n = result.getNumElements(); i < n; ++i) {
    if (cond.ints()[ci[i]])
      result.copyElement(i, lhs, li[i]);
    else
      result.copyElement(i, rhs, ri[i]);
  }
  return result;
}

/// Unary float math: result[i] = fn(input[i]).
template <typename Fn>
Tensor floatUnary(Operation *op, const Tensor &input, Fn fn) {
  Tensor result = makeResult(op);
  for (int64_t i = 0, n = result.getNumElements(); i < n; ++i)
    result.floats()[i] = fn(input.floats()[i]);
  return result;
}

double sigmoid(double x) {
  if (x >= 0)
    return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

Tensor evalCast(Operation *op, const Tensor &input, const ExecutorOptions &options) {
  Tensor result = makeResult(op);
  Type to = result.getElementType();
  int64_t n = result.getNumElements();
  if (to.isInteger(1)) {
    for (int64_t i = 0; i < n; ++i)
      result.ints()[i] = input.isFloat() ? (input.floats()[i] != 0.0)
                                         : (input.ints()[i] != 0);
    return result;
  }
  if (result.isFloat()) {
    for (int64_t i = 0; i < n; ++i) {
      if (input.isFloat()) {
        result.floats()[i] = saturateInfinityForFP8(to, input.floats()[i]);
      } else if (to.isF32() && !options.computeInF64) {
        // One rounding from int64 (double first would round twice).
        result.floats()[i] = static_cast<float>(input.ints()[i]);
      } else {
        result.floats()[i] = static_cast<double>(input.ints()[i]);
      }
    }
    return result;
  }
  // To an integer: floats truncate toward zero, then wrap to the width.
  for (int64_t i = 0; i < n; ++i)
    result.ints()[i] = input.getInt(i);
  return result;
}

Tensor evalDropout(tx::DropoutOp op, const Tensor &input, const Tensor &key) {
  Tensor result = makeResult(op);
  double ratio = op.getRatio().convertToFloat();
  double scale = 1.0 / (1.0 - ratio);
  auto seed = static_cast<uint64_t>(op.getSeed());
  auto keyBits = static_cast<uint64_t>(key.ints()[0]);
  for (int64_t i = 0, n = result.getNumElements(); i < n; ++i) {
    bool keep =
        dropoutUniform(seed, keyBits, static_cast<uint64_t>(i)) >= ratio;
    result.floats()[i] = keep ? input.floats()[i] * scale : 0.0;
  }
  return result;
}

} // namespace

/// Counter-based dropout mask (tx.dropout's description): the (index + 1)-th
/// output of splitmix64 from the state s = seed + key * 0x2545F4914F6CDD1D,
/// i.e. z = s + (index + 1) * 0x9E3779B97F4A7C15 followed by splitmix64's
/// finalizer; u = (z >> 11) * 2^-53 in [0, 1). The element is kept when
/// u >= ratio. Independent of evaluation order, so any backend (the GPU code
/// generator uses the same formula) reproduces it from (seed, key, index).
/// All (seed, key) pairs walk one sequence of states spaced by the golden
/// ratio constant G; the key's factor C places key k + 1's stream
/// C / G = 0x4232DB54AA7FB6E9 (mod 2^64) indices after key k's, far beyond
/// any tensor, where `s = seed + key` would put dropout seed 1 at key 0 on
/// the mask of seed 0 at key 1 (one op's mask at one step repeating
/// another's at the next).
double mlir::txopt::reference::dropoutUniform(uint64_t seed, uint64_t key, uint64_t index) {
  uint64_t z = seed + key * 0x2545F4914F6CDD1Dull;
  z += (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

llvm::Expected<bool> mlir::txopt::reference::evalElementwiseOp(
    Operation *op, const KernelArgs &args) {
  auto &in = args.operands;
  auto &results = args.results;
  if (isa<tx::AddOp, tx::SubOp, tx::MulOp, tx::DivOp, tx::PowOp, tx::ModOp,
          tx::MaxOp, tx::MinOp, tx::EqualOp, tx::GreaterOrEqualOp, tx::LessOp, tx::LessOrEqualOp,
          tx::GreaterOp, tx::AndOp, tx::OrOp, tx::XorOp>(op)) {
    auto result = evalBinary(op, *in[0], *in[1]);
    if (!result)
      return result.takeError();
    results.push_back(std::move(*result));
    return true;
  }
  if (isa<tx::WhereOp>(op)) {
    results.push_back(evalWhere(op, *in[0], *in[1], *in[2]));
    return true;
  }
  if (isa<tx::IdentityOp>(op)) {
    results.push_back(*in[0]);
    return true;
  }
  if (isa<tx::CastOp>(op)) {
    results.push_back(evalCast(op, *in[0], args.options));
    return true;
  }
  if (auto dropout = dyn_cast<tx::DropoutOp>(op)) {
    results.push_back(args.options.disableDropout ? *in[0]
                                                  : evalDropout(dropout, *in[0],
                                                                *in[1]));
    return true;
  }
  if (isa<tx::NotOp>(op)) {
    Tensor result = makeResult(op);
    for (int64_t i = 0, n = result.getNumElements(); i < n; ++i)
      result.ints()[i] = in[0]->ints()[i] == 0 ? 1 : 0;
    results.push_back(std::move(result));
    return true;
  }
  if (isa<tx::IsNaNOp>(op)) {
    Tensor result = makeResult(op);
    for (int64_t i = 0, n = result.getNumElements(); i < n; ++i)
      result.ints()[i] = std::isnan(in[0]->floats()[i]) ? 1 : 0;
    results.push_back(std::move(result));
    return true;
  }
  if (isa<tx::NegOp, tx::ReluOp>(op)) {
    bool neg = isa<tx::NegOp>(op);
    Tensor result = makeResult(op);
    const Tensor &x = *in[0];
    for (int64_t i = 0, n = result.getNumElements(); i < n; ++i) {
      if (x.isFloat()) {
        double v = x.floats()[i];
        // Relu keeps NaN (max(NaN, 0) is NaN in onnxruntime).
        result.floats()[i] = neg ? -v : (v < 0.0 ? 0.0 : v);
      } else {
        int64_t v = x.ints()[i];
        result.ints()[i] = neg ? wrapSub(0, v) : std::max<int64_t>(v, 0);
      }
    }
    results.push_back(std::move(result));
    return true;
  }

  using Fn = double (*)(double);
  Fn fn = llvm::TypeSwitch<Operation *, Fn>(op)
              .Case([](tx::SqrtOp) -> Fn { return [](double x) { return std::sqrt(x); }; })
              .Case([](tx::ReciprocalOp) -> Fn { return [](double x) { return 1.0 / x; }; })
              .Case([](tx::ErfOp) -> Fn { return [](double x) { return std::erf(x); }; })
              .Case([](tx::TanhOp) -> Fn { return [](double x) { return std::tanh(x); }; })
              .Case([](tx::SigmoidOp) -> Fn { return sigmoid; })
              .Case([](tx::ExpOp) -> Fn { return [](double x) { return std::exp(x); }; })
              .Case([](tx::LogOp) -> Fn { return [](double x) { return std::log(x); }; })
              .Case([](tx::SinOp) -> Fn { return [](double x) { return std::sin(x); }; })
              .Case([](tx::CosOp) -> Fn { return [](double x) { return std::cos(x); }; })
              .Default([](Operation *) -> Fn { return nullptr; });
  if (!fn)
    return false;
  results.push_back(floatUnary(op, *in[0], fn));
  return true;
}
