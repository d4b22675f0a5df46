//===- loss_plot.h - a PNG of a run's loss curves ---------------*- C++ -*-===//
//
// SPDX-License-Identifier: Apache-2.0
// Draws the training and validation losses of a --log JSONL file (txrun or
// txopt-run) into a PNG, with no library: a small raster (lines, dots, a
// 5x7 bitmap font for the axis labels) written as an uncompressed PNG
// (zlib "stored" blocks, so no deflate is needed). For looking at a run;
// scripts/plot_log.py draws richer figures where Python is available.
//
//===----------------------------------------------------------------------===//

#ifndef TXRT_CORE_LOSS_PLOT_H
#define TXRT_CORE_LOSS_PLOT_H

#include "core/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace txrt {

struct LossCurves {
  std::vector<std::pair<int64_t, double>> train; ///< (step, loss), by step
  std::vector<std::pair<int64_t, double>> val;   ///< (step, val_loss)
};

/// Reads the step and validation records of a --log file; a step logged
/// twice (a resumed run appending) keeps its last record. Fails naming the
/// line that is not a JSON object, or when there is no finite loss.
Status readLossCurves(const std::string &logPath, LossCurves &out);

/// Writes |curves| as a |width| x |height| PNG at |pngPath|: the training
/// loss (light), its moving average over ~1% of the steps (blue), the
/// validation loss (orange, dots), axes with labelled ticks.
Status writeLossPlot(const LossCurves &curves, const std::string &pngPath,
                     int width = 960, int height = 540);

/// The bytes of an RGB PNG (8 bits per channel, no interlace) of |rgb|
/// (width * height * 3 bytes, rows top to bottom). Exposed for tests.
std::vector<uint8_t> encodePng(const std::vector<uint8_t> &rgb, int width, int height);

} // namespace txrt

#endif // TXRT_CORE_LOSS_PLOT_H
