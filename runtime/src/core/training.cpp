//===- training.cpp - run-level logic both drivers share ------------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "core/training.h"

#include "core/json.h"

#include <cmath>
#include <cstdio>

namespace txrt {

double LrSchedule::at(int64_t step) const {
  if (warmup > 0 && step <= warmup)
    return lr * static_cast<double>(step) / static_cast<double>(warmup);
  if (kind == Kind::Constant)
    return lr;
  if (step >= decaySteps)
    return minLr;
  double p = static_cast<double>(step - warmup) / static_cast<double>(decaySteps - warmup);
  if (kind == Kind::Cosine)
    return minLr + 0.5 * (1.0 + std::cos(M_PI * p)) * (lr - minLr);
  return lr + p * (minLr - lr);
}

std::string LrSchedule::json() const {
  return std::string("{\"kind\":\"") + scheduleKindName(kind) + "\",\"lr\":" + json::number(lr) +
         ",\"warmup\":" + std::to_string(warmup) + ",\"decay_steps\":" +
         std::to_string(decaySteps) + ",\"min_lr\":" + json::number(minLr) + "}";
}

Status LrSchedule::validate() const {
  if (!(lr >= 0) || !std::isfinite(lr) || !(minLr >= 0) || !std::isfinite(minLr))
    return Status::invalid("the learning rates must be finite and >= 0");
  if (warmup < 0)
    return Status::invalid("--warmup must be >= 0");
  if (kind != Kind::Constant && decaySteps <= warmup)
    return Status::invalid("--decay-steps (" + std::to_string(decaySteps) +
                           ") must exceed --warmup (" + std::to_string(warmup) +
                           ") for a " + scheduleKindName(kind) + " schedule");
  return Status();
}

bool parseScheduleKind(const std::string &text, LrSchedule::Kind &out) {
  if (text == "cosine")
    out = LrSchedule::Kind::Cosine;
  else if (text == "linear")
    out = LrSchedule::Kind::Linear;
  else if (text == "constant")
    out = LrSchedule::Kind::Constant;
  else
    return false;
  return true;
}

const char *scheduleKindName(LrSchedule::Kind kind) {
  switch (kind) {
  case LrSchedule::Kind::Constant: return "constant";
  case LrSchedule::Kind::Cosine: return "cosine";
  case LrSchedule::Kind::Linear: return "linear";
  }
  return "?";
}

int64_t TokenWindows::next() {
  int64_t result;
  if (!shuffle_) {
    if (offset_ + window_ + 1 > tokens_)
      offset_ = 0;
    result = offset_;
    offset_ += window_;
  } else {
    int64_t perEpoch = windowsPerEpoch();
    if (perEpoch <= 0)
      return 0;
    int64_t epoch = consumed_ / perEpoch, index = consumed_ % perEpoch;
    if (epoch != epoch_) {
      order_.resize(static_cast<size_t>(perEpoch));
      for (int64_t j = 0; j < perEpoch; ++j)
        order_[static_cast<size_t>(j)] = j;
      uint64_t state = (seed_ << 32) ^ 0x73687566666c65ull ^
                       (static_cast<uint64_t>(epoch) * 0xD1B54A32D192ED03ull);
      auto nextRandom = [&]() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
      };
      for (int64_t i = perEpoch - 1; i >= 1; --i) {
        uint64_t j = nextRandom() % static_cast<uint64_t>(i + 1);
        std::swap(order_[static_cast<size_t>(i)], order_[static_cast<size_t>(j)]);
      }
      epoch_ = epoch;
    }
    result = order_[static_cast<size_t>(index)] * window_;
    // Keep the sequential position too, so a checkpoint records one.
    if (offset_ + window_ + 1 > tokens_)
      offset_ = 0;
    offset_ += window_;
  }
  ++consumed_;
  return result;
}

void TokenWindows::resume(int64_t consumed, int64_t offset) {
  consumed_ = consumed < 0 ? 0 : consumed;
  offset_ = offset < 0 ? 0 : offset;
}

namespace {
std::string num(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
} // namespace

std::string stepLogLine(const StepRecord &r) {
  std::string line = "{\"step\":" + std::to_string(r.step) + ",\"loss\":" + num(r.loss);
  if (r.hasGradNorm)
    line += ",\"grad_norm\":" + num(r.gradNorm);
  if (r.hasLr)
    line += ",\"lr\":" + num(r.lr);
  line += ",\"ms\":" + num(r.ms);
  if (r.hasTokens)
    line += ",\"tok_per_s\":" + num(r.tokPerS);
  if (r.skipped)
    line += ",\"skipped\":true";
  if (r.hasDevice) {
    line += ",\"tflops\":" + num(r.tflops);
    if (r.mfu >= 0)
      line += ",\"mfu\":" + num(r.mfu);
    line += ",\"mem_gib\":" + num(r.memGib);
  }
  return line + "}";
}

double peakTflops(const std::string &deviceName, PeakKind kind) {
  // Dense tensor-core peaks (f32: the CUDA cores) of the SXM parts, as
  // NVIDIA's data sheets give them; PCIe/NVL parts run lower clocks.
  struct Peak {
    const char *name;
    double f32, tf32, bf16, fp8;
  };
  static const Peak kPeaks[] = {
      {"H100 PCIe", 51.2, 378.0, 756.0, 1513.0},
      {"H100 NVL", 60.0, 418.0, 835.0, 1671.0},
      {"H200 NVL", 60.0, 418.0, 835.0, 1671.0},
      {"H200", 66.9, 494.7, 989.4, 1978.9},
      {"H100", 66.9, 494.7, 989.4, 1978.9},
      {"A100", 19.5, 156.0, 312.0, 0.0},
  };
  for (const Peak &p : kPeaks)
    if (deviceName.find(p.name) != std::string::npos) {
      switch (kind) {
      case PeakKind::F32: return p.f32;
      case PeakKind::TF32: return p.tf32;
      case PeakKind::BF16: return p.bf16;
      case PeakKind::FP8: return p.fp8;
      }
    }
  return 0.0;
}

const char *peakKindName(PeakKind kind) {
  switch (kind) {
  case PeakKind::F32: return "f32";
  case PeakKind::TF32: return "tf32";
  case PeakKind::BF16: return "bf16";
  case PeakKind::FP8: return "fp8";
  }
  return "?";
}

std::string progressBar(int64_t done, int64_t first, int64_t total, double elapsedSeconds,
                        int width) {
  int64_t span = total - first + 1, ran = done - first + 1;
  double fraction = span > 0 ? static_cast<double>(ran) / static_cast<double>(span) : 1.0;
  fraction = fraction < 0 ? 0 : fraction > 1 ? 1 : fraction;
  int marks = static_cast<int>(fraction * width);
  std::string bar = "[" + std::string(static_cast<size_t>(marks), '#') +
                    std::string(static_cast<size_t>(width - marks), '.') + "] " +
                    std::to_string(done) + "/" + std::to_string(total) + "  " +
                    std::to_string(static_cast<int>(fraction * 100)) + "%  ETA ";
  if (ran <= 0 || !(elapsedSeconds > 0))
    return bar + "-";
  double eta = elapsedSeconds / static_cast<double>(ran) * static_cast<double>(total - done);
  long long seconds = static_cast<long long>(eta + 0.5);
  char buf[32];
  if (seconds >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", seconds / 3600, seconds / 60 % 60,
                  seconds % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", seconds / 60, seconds % 60);
  return bar + buf;
}

std::string valLogLine(int64_t step, double valLoss, int64_t windows) {
  return "{\"step\":" + std::to_string(step) + ",\"val_loss\":" + num(valLoss) +
         ",\"val_windows\":" + std::to_string(windows) + "}";
}

} // namespace txrt
