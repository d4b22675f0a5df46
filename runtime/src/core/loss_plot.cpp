//===- loss_plot.cpp - a PNG of a run's loss curves -----------------------===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "core/loss_plot.h"

#include "core/json.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace txrt {

Status readLossCurves(const std::string &logPath, LossCurves &out) {
  std::ifstream in(logPath);
  if (!in)
    return Status::invalid("cannot read '" + logPath + "': " + std::strerror(errno));
  std::map<int64_t, double> train, val;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    json::Value record;
    if (Status s = json::parse(line, record);
        !s.ok() || record.kind != json::Value::Kind::Object)
      return Status::invalid(logPath + ":" + std::to_string(number) +
                             ": not a JSON object (a --log file has one per line)");
    const json::Value *step = record.find("step");
    int64_t at = 0;
    if (!step || !step->asInt64(at))
      continue;
    auto take = [&](const char *key, std::map<int64_t, double> &into) {
      const json::Value *v = record.find(key);
      if (v && v->kind == json::Value::Kind::Number && std::isfinite(v->number))
        into[at] = v->number;
    };
    take("loss", train);
    take("val_loss", val);
  }
  if (train.empty() && val.empty())
    return Status::invalid("'" + logPath + "' holds no finite loss to plot");
  out.train.assign(train.begin(), train.end());
  out.val.assign(val.begin(), val.end());
  return Status();
}

namespace {

/// 5x7 glyphs of the characters axis labels need ('#' = ink).
const std::map<char, std::array<const char *, 7>> &font() {
  static const std::map<char, std::array<const char *, 7>> glyphs = {
      {'0', {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."}},
      {'1', {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."}},
      {'2', {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"}},
      {'3', {"####.", "....#", "....#", ".###.", "....#", "....#", "####."}},
      {'4', {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."}},
      {'5', {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."}},
      {'6', {".###.", "#....", "#....", "####.", "#...#", "#...#", ".###."}},
      {'7', {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."}},
      {'8', {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."}},
      {'9', {".###.", "#...#", "#...#", ".####", "....#", "....#", ".###."}},
      {'.', {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."}},
      {'-', {".....", ".....", ".....", ".###.", ".....", ".....", "....."}},
      {'e', {".....", ".....", ".###.", "#...#", "#####", "#....", ".###."}},
      {'s', {".....", ".....", ".####", "#....", ".###.", "....#", "####."}},
      {'t', {".#...", ".#...", "####.", ".#...", ".#...", ".#..#", "..##."}},
      {'p', {".....", ".....", "####.", "#...#", "####.", "#....", "#...."}},
      {'l', {".##..", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."}},
      {'o', {".....", ".....", ".###.", "#...#", "#...#", "#...#", ".###."}},
      {'r', {".....", ".....", "#.##.", "##..#", "#....", "#....", "#...."}},
      {'a', {".....", ".....", ".###.", "....#", ".####", "#...#", ".####"}},
      {'i', {"..#..", ".....", ".##..", "..#..", "..#..", "..#..", ".###."}},
      {'n', {".....", ".....", "#.##.", "##..#", "#...#", "#...#", "#...#"}},
      {'m', {".....", ".....", "##.#.", "#.#.#", "#.#.#", "#...#", "#...#"}},
      {'v', {".....", ".....", "#...#", "#...#", "#...#", ".#.#.", "..#.."}},
      {'d', {"....#", "....#", ".##.#", "#..##", "#...#", "#...#", ".####"}},
      {'c', {".....", ".....", ".###.", "#....", "#....", "#...#", ".###."}},
      {'u', {".....", ".....", "#...#", "#...#", "#...#", "#..##", ".##.#"}},
      {'g', {".....", ".####", "#...#", "#...#", ".####", "....#", ".###."}},
      {'f', {"..##.", ".#..#", ".#...", "###..", ".#...", ".#...", ".#..."}},
      {'h', {"#....", "#....", "#.##.", "##..#", "#...#", "#...#", "#...#"}},
      {'(', {"...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."}},
      {')', {".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."}},
      {',', {".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."}},
      {':', {".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."}},
      {' ', {".....", ".....", ".....", ".....", ".....", ".....", "....."}},
  };
  return glyphs;
}

struct Rgb {
  uint8_t r, g, b;
};

class Canvas {
public:
  Canvas(int width, int height) : w(width), h(height), pixels(size_t(width) * height * 3, 255) {}

  void set(int x, int y, Rgb c) {
    if (x < 0 || y < 0 || x >= w || y >= h)
      return;
    uint8_t *p = &pixels[(size_t(y) * w + x) * 3];
    p[0] = c.r, p[1] = c.g, p[2] = c.b;
  }
  /// A line of |thickness| pixels (Bresenham, a square brush).
  void line(double x0, double y0, double x1, double y1, Rgb c, int thickness = 1) {
    int ax = int(std::lround(x0)), ay = int(std::lround(y0));
    int bx = int(std::lround(x1)), by = int(std::lround(y1));
    int dx = std::abs(bx - ax), dy = -std::abs(by - ay);
    int sx = ax < bx ? 1 : -1, sy = ay < by ? 1 : -1, err = dx + dy;
    for (int guard = 0; guard < 4 * (w + h); ++guard) {
      dot(ax, ay, c, thickness);
      if (ax == bx && ay == by)
        break;
      int e2 = 2 * err;
      if (e2 >= dy)
        err += dy, ax += sx;
      if (e2 <= dx)
        err += dx, ay += sy;
    }
  }
  void dot(int x, int y, Rgb c, int size) {
    for (int i = -(size / 2); i < size - size / 2; ++i)
      for (int j = -(size / 2); j < size - size / 2; ++j)
        set(x + i, y + j, c);
  }
  /// |text| with its top-left corner at (x, y), glyphs 6 pixels apart
  /// (scaled by |scale|); characters without a glyph are left blank.
  void text(int x, int y, const std::string &s, Rgb c, int scale = 1) {
    for (size_t k = 0; k < s.size(); ++k) {
      auto it = font().find(s[k]);
      if (it == font().end())
        continue;
      for (int row = 0; row < 7; ++row)
        for (int col = 0; col < 5; ++col)
          if (it->second[row][col] == '#')
            for (int u = 0; u < scale; ++u)
              for (int v = 0; v < scale; ++v)
                set(x + int(k) * 6 * scale + col * scale + u, y + row * scale + v, c);
    }
  }
  static int textWidth(const std::string &s, int scale = 1) { return int(s.size()) * 6 * scale; }

  int w, h;
  std::vector<uint8_t> pixels;
};

/// A tick label: up to 4 significant digits, no trailing zeros.
std::string tickLabel(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", std::abs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

/// Ticks at 1, 2 or 5 times a power of ten, about |count| of them in [lo, hi].
std::vector<double> niceTicks(double lo, double hi, int count) {
  double span = hi - lo;
  if (!(span > 0))
    return {lo};
  double raw = span / count, power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = raw / power < 1.5 ? power : raw / power < 3.5 ? 2 * power
                                          : raw / power < 7.5 ? 5 * power
                                                              : 10 * power;
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(t);
  return ticks;
}

uint32_t crc32(const uint8_t *data, size_t n, uint32_t crc = 0) {
  static uint32_t table[256];
  static bool ready = false;
  if (!ready) {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    ready = true;
  }
  crc = ~crc;
  for (size_t i = 0; i < n; ++i)
    crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

void put32(std::vector<uint8_t> &out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(uint8_t(v >> shift));
}

void chunk(std::vector<uint8_t> &png, const char *type, const std::vector<uint8_t> &data) {
  put32(png, uint32_t(data.size()));
  size_t start = png.size();
  png.insert(png.end(), type, type + 4);
  png.insert(png.end(), data.begin(), data.end());
  put32(png, crc32(&png[start], png.size() - start));
}

} // namespace

std::vector<uint8_t> encodePng(const std::vector<uint8_t> &rgb, int width, int height) {
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> header;
  put32(header, uint32_t(width));
  put32(header, uint32_t(height));
  header.insert(header.end(), {8, 2, 0, 0, 0}); // 8-bit RGB, no interlace
  chunk(png, "IHDR", header);
  // The scanlines (filter byte 0 before each row) in a zlib stream of
  // stored deflate blocks: the file is bigger than a compressed one, and
  // needs no compressor.
  std::vector<uint8_t> raw;
  raw.reserve(size_t(height) * (size_t(width) * 3 + 1));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), rgb.begin() + size_t(y) * width * 3,
               rgb.begin() + size_t(y + 1) * width * 3);
  }
  std::vector<uint8_t> z = {0x78, 0x01};
  for (size_t at = 0; at < raw.size() || raw.empty(); at += 65535) {
    size_t n = std::min<size_t>(65535, raw.size() - at);
    bool last = at + n >= raw.size();
    z.push_back(last ? 1 : 0);
    z.insert(z.end(), {uint8_t(n), uint8_t(n >> 8), uint8_t(~n), uint8_t(~n >> 8)});
    z.insert(z.end(), raw.begin() + at, raw.begin() + at + n);
    if (last)
      break;
  }
  uint32_t a = 1, b = 0;
  for (uint8_t byte : raw)
    a = (a + byte) % 65521, b = (b + a) % 65521;
  put32(z, (b << 16) | a);
  chunk(png, "IDAT", z);
  chunk(png, "IEND", {});
  return png;
}

Status writeLossPlot(const LossCurves &curves, const std::string &pngPath, int width,
                     int height) {
  Canvas canvas(width, height);
  const int left = 80, right = 20, top = 40, bottom = 50;
  const int plotW = width - left - right, plotH = height - top - bottom;
  // The moving average: ~1% of the steps, at least 1.
  size_t window = std::max<size_t>(1, curves.train.size() / 100);
  std::vector<std::pair<int64_t, double>> mean;
  double sum = 0;
  for (size_t i = 0; i < curves.train.size(); ++i) {
    sum += curves.train[i].second;
    if (i >= window)
      sum -= curves.train[i - window].second;
    mean.push_back({curves.train[i].first, sum / double(std::min(i + 1, window))});
  }
  // The y range holds the averaged and validation curves (raw losses may
  // spike out of it and are clipped), the x range every step.
  double yLo = INFINITY, yHi = -INFINITY, xLo = INFINITY, xHi = -INFINITY;
  using Series = std::vector<std::pair<int64_t, double>>;
  for (const Series *series : {static_cast<const Series *>(&mean), &curves.val})
    for (auto [step, loss] : *series) {
      yLo = std::min(yLo, loss), yHi = std::max(yHi, loss);
      xLo = std::min(xLo, double(step)), xHi = std::max(xHi, double(step));
    }
  if (!(yHi > yLo))
    yLo -= 0.5, yHi += 0.5;
  if (!(xHi > xLo))
    xLo -= 1, xHi += 1;
  double pad = 0.05 * (yHi - yLo);
  yLo -= pad, yHi += pad;
  auto px = [&](double step) { return left + (step - xLo) / (xHi - xLo) * plotW; };
  auto py = [&](double loss) {
    double y = top + (yHi - loss) / (yHi - yLo) * plotH;
    return std::clamp(y, double(top), double(top + plotH));
  };
  const Rgb axis{0, 0, 0}, grid{225, 225, 225}, raw{170, 200, 235}, blue{31, 119, 180},
      orange{230, 120, 20};
  for (double t : niceTicks(yLo, yHi, 6)) {
    canvas.line(left, py(t), left + plotW, py(t), grid);
    std::string label = tickLabel(t);
    canvas.text(left - 8 - Canvas::textWidth(label), int(py(t)) - 3, label, axis);
  }
  for (double t : niceTicks(xLo, xHi, 8)) {
    canvas.line(px(t), top, px(t), top + plotH, grid);
    std::string label = tickLabel(t);
    canvas.text(int(px(t)) - Canvas::textWidth(label) / 2, top + plotH + 8, label, axis);
  }
  canvas.line(left, top, left, top + plotH, axis);
  canvas.line(left, top + plotH, left + plotW, top + plotH, axis);
  canvas.text(left + plotW / 2 - Canvas::textWidth("step"), height - 20, "step", axis, 2);
  canvas.text(8, top - 30, "loss", axis, 2);
  for (size_t i = 1; i < curves.train.size(); ++i)
    canvas.line(px(curves.train[i - 1].first), py(curves.train[i - 1].second),
                px(curves.train[i].first), py(curves.train[i].second), raw);
  for (size_t i = 1; i < mean.size(); ++i)
    canvas.line(px(mean[i - 1].first), py(mean[i - 1].second), px(mean[i].first),
                py(mean[i].second), blue, 2);
  for (size_t i = 0; i < curves.val.size(); ++i) {
    if (i > 0)
      canvas.line(px(curves.val[i - 1].first), py(curves.val[i - 1].second),
                  px(curves.val[i].first), py(curves.val[i].second), orange, 2);
    canvas.dot(int(px(curves.val[i].first)), int(py(curves.val[i].second)), orange, 7);
  }
  // The legend, top right.
  int lx = left + plotW - 260, ly = top + 10;
  canvas.line(lx, ly + 3, lx + 20, ly + 3, raw, 2);
  canvas.text(lx + 26, ly, "train", axis);
  canvas.line(lx, ly + 15, lx + 20, ly + 15, blue, 2);
  canvas.text(lx + 26, ly + 12,
              "train, mean of " + std::to_string(window) + " step" + (window > 1 ? "s" : ""),
              axis);
  if (!curves.val.empty()) {
    canvas.line(lx, ly + 27, lx + 20, ly + 27, orange, 2);
    canvas.text(lx + 26, ly + 24, "validation", axis);
  }
  std::vector<uint8_t> png = encodePng(canvas.pixels, width, height);
  std::string temporary = pngPath + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      return Status::invalid("cannot write '" + pngPath + "': " + std::strerror(errno));
    out.write(reinterpret_cast<const char *>(png.data()), std::streamsize(png.size()));
    if (!out)
      return Status::invalid("cannot write '" + pngPath + "': " + std::strerror(errno));
  }
  if (std::rename(temporary.c_str(), pngPath.c_str()) != 0)
    return Status::invalid("cannot write '" + pngPath + "': " + std::strerror(errno));
  return Status();
}

} // namespace txrt
