//===- checkpoint.cpp - training checkpoints (safetensors + manifest) -----===//
//
// SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "core/checkpoint.h"

#include "core/json.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <unistd.h>

namespace txrt {
namespace {

void maybeKill(const char *phase) {
  const char *at = std::getenv("TXRT_CHECKPOINT_KILL_AT");
  if (at && std::strcmp(at, phase) == 0)
    std::raise(SIGKILL);
}

std::string errnoText() { return std::strerror(errno); }

Status makeDirectories(const std::string &path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      std::string prefix = path.substr(0, i);
      if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
        return Status::invalid("cannot create '" + prefix + "': " + errnoText());
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::invalid("'" + path + "' is not a folder");
  return Status();
}

Status fsyncPath(const std::string &path, bool directory) {
  int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0)
    return Status::invalid("cannot open '" + path + "' to sync it: " + errnoText());
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  if (rc != 0)
    return Status::invalid("cannot sync '" + path + "': " + std::strerror(saved));
  return Status();
}

/// Writes |chunks| to |path| (created or truncated) and fsyncs it.
/// |killAfterFirst| names the kill phase between the first and the rest.
Status writeFileSynced(const std::string &path,
                       const std::vector<std::pair<const uint8_t *, size_t>> &chunks,
                       const char *killAfterHalf) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::invalid("cannot create '" + path + "': " + errnoText());
  size_t total = 0, done = 0;
  for (auto &c : chunks)
    total += c.second;
  for (auto &[data, size] : chunks) {
    size_t off = 0;
    while (off < size) {
      size_t n = std::min<size_t>(size - off, size_t(1) << 26);
      if (killAfterHalf) {
        // Stop exactly halfway for the kill tests.
        if (done + off >= total / 2)
          maybeKill(killAfterHalf);
        else
          n = std::min(n, total / 2 - (done + off));
      }
      ssize_t w = ::write(fd, data + off, n);
      if (w < 0) {
        if (errno == EINTR)
          continue;
        int saved = errno;
        ::close(fd);
        return Status::invalid("cannot write '" + path + "': " + std::strerror(saved));
      }
      off += static_cast<size_t>(w);
    }
    done += size;
  }
  if (::fsync(fd) != 0) {
    int saved = errno;
    ::close(fd);
    return Status::invalid("cannot sync '" + path + "': " + std::strerror(saved));
  }
  if (::close(fd) != 0)
    return Status::invalid("cannot close '" + path + "': " + errnoText());
  return Status();
}

Status readWholeFile(const std::string &path, std::string &out) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::invalid("cannot read '" + path + "': " + errnoText());
  out.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  if (file.bad())
    return Status::invalid("cannot read '" + path + "': I/O error");
  return Status();
}

std::string hex64(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string shapeJson(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

bool elementsOf(const std::vector<int64_t> &shape, uint64_t &out) {
  out = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return false;
    if (d && out > (uint64_t(1) << 62) / static_cast<uint64_t>(d))
      return false;
    out *= static_cast<uint64_t>(d);
  }
  return true;
}

Status readShape(const json::Value *v, std::vector<int64_t> &out) {
  out.clear();
  if (!v || v->kind != json::Value::Kind::Array)
    return Status::invalid("no shape");
  for (const json::Value &d : v->array) {
    int64_t n;
    if (!d.asInt64(n) || n < 0)
      return Status::invalid("bad shape");
    out.push_back(n);
  }
  return Status();
}

std::string dataFileName(int64_t step, bool alternate) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%08lld%s.safetensors", static_cast<long long>(step),
                alternate ? "-1" : "");
  return buf;
}

/// The tensor file the current manifest of |dir| names, or "".
std::string currentDataFile(const std::string &dir) {
  std::string text;
  if (!readWholeFile(dir + "/" + kCheckpointManifest, text).ok())
    return "";
  json::Value manifest;
  if (!json::parse(text, manifest).ok())
    return "";
  const json::Value *file = manifest.find("file");
  return file && file->kind == json::Value::Kind::String ? file->text : "";
}

bool isOwnFile(const std::string &name) {
  auto endsWith = [&](const char *suffix) {
    size_t n = std::strlen(suffix);
    return name.size() >= n && name.compare(name.size() - n, n, suffix) == 0;
  };
  return (name.rfind("model-", 0) == 0 && endsWith(".safetensors")) ||
         (name.rfind(".model-", 0) == 0 && name.find(".tmp-") != std::string::npos) ||
         name.rfind(".checkpoint.json.tmp-", 0) == 0;
}

} // namespace

const std::vector<std::string> &checkpointKillPhases() {
  static const std::vector<std::string> phases = {
      "data-partial", "data-written", "data-renamed",
      "manifest-written", "manifest-renamed", "cleaned"};
  return phases;
}

const CheckpointTensor *Checkpoint::find(const std::string &name) const {
  for (const CheckpointTensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

size_t safetensorsDTypeSize(const std::string &d) {
  if (d == "F64" || d == "I64" || d == "U64")
    return 8;
  if (d == "F32" || d == "I32" || d == "U32")
    return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16")
    return 2;
  if (d == "F8_E4M3" || d == "F8_E5M2" || d == "I8" || d == "U8" || d == "BOOL")
    return 1;
  return 0;
}

uint64_t fnv1a64(const void *data, size_t size) {
  const auto *p = static_cast<const uint8_t *>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

Status saveCheckpoint(const std::string &dir, const Checkpoint &checkpoint) {
  const CheckpointInfo &info = checkpoint.info;
  // The safetensors header, and the manifest's tensor list.
  std::string header = "{\"__metadata__\":{\"format\":\"txopt-checkpoint\",\"format_version\":\"" +
                       std::to_string(kCheckpointFormatVersion) + "\",\"step\":\"" +
                       std::to_string(info.step) + "\",\"producer\":" +
                       json::quote(info.producer) + "}";
  std::string tensors = "[";
  uint64_t offset = 0;
  for (size_t i = 0; i < checkpoint.tensors.size(); ++i) {
    const CheckpointTensor &t = checkpoint.tensors[i];
    size_t size = safetensorsDTypeSize(t.dtype);
    uint64_t elements;
    if (!size || !elementsOf(t.shape, elements) || elements * size != t.bytes.size())
      return Status::internal("checkpoint tensor '" + t.name + "': " +
                              std::to_string(t.bytes.size()) + " bytes for " + t.dtype +
                              " " + shapeText(t.shape));
    if (t.name == "__metadata__" || checkpoint.find(t.name) != &t)
      return Status::internal("checkpoint tensor name '" + t.name + "' is not unique");
    header += "," + json::quote(t.name) + ":{\"dtype\":\"" + t.dtype +
              "\",\"shape\":" + shapeJson(t.shape) + ",\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + t.bytes.size()) + "]}";
    offset += t.bytes.size();
    tensors += std::string(i ? "," : "") + "\n    {\"name\":" + json::quote(t.name) +
               ",\"role\":" + json::quote(t.role) + ",\"dtype\":\"" + t.dtype +
               "\",\"shape\":" + shapeJson(t.shape) + ",\"fnv1a64\":\"" +
               hex64(fnv1a64(t.bytes.data(), t.bytes.size())) + "\"";
    if (!t.sites.empty()) {
      tensors += ",\"sites\":[";
      for (size_t k = 0; k < t.sites.size(); ++k)
        tensors += (k ? "," : "") + json::quote(t.sites[k]);
      tensors += "]";
    }
    tensors += "}";
  }
  header += "}";
  tensors += "\n  ]";
  while (header.size() % 8)
    header += ' ';
  uint8_t lengthBytes[8];
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    lengthBytes[i] = static_cast<uint8_t>(n >> (8 * i));

  TXRT_RETURN_IF_ERROR(makeDirectories(dir));
  std::string current = currentDataFile(dir);
  std::string name = dataFileName(info.step, false);
  if (name == current)
    name = dataFileName(info.step, true);
  std::string pid = std::to_string(::getpid());
  std::string tmp = dir + "/." + name + ".tmp-" + pid;
  std::vector<std::pair<const uint8_t *, size_t>> chunks;
  chunks.emplace_back(lengthBytes, 8);
  chunks.emplace_back(reinterpret_cast<const uint8_t *>(header.data()), header.size());
  for (const CheckpointTensor &t : checkpoint.tensors)
    chunks.emplace_back(t.bytes.data(), t.bytes.size());
  TXRT_RETURN_IF_ERROR(writeFileSynced(tmp, chunks, "data-partial"));
  maybeKill("data-written");
  if (::rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0)
    return Status::invalid("cannot rename '" + tmp + "': " + errnoText());
  TXRT_RETURN_IF_ERROR(fsyncPath(dir, true));
  maybeKill("data-renamed");

  std::string recipe = info.recipe.empty() ? "{}" : info.recipe;
  json::Value parsed;
  if (!json::parse(recipe, parsed).ok())
    recipe = json::quote(recipe);
  std::string manifest = "{\n  \"format\": \"txopt-checkpoint\",\n  \"format_version\": " +
                         std::to_string(kCheckpointFormatVersion) +
                         ",\n  \"producer\": " + json::quote(info.producer) +
                         ",\n  \"recipe\": " + recipe +
                         ",\n  \"step\": " + std::to_string(info.step) +
                         ",\n  \"seed\": " + std::to_string(info.seed);
  if (info.hasData)
    manifest += ",\n  \"data\": {\"file\": " + json::quote(info.dataFile) +
                ", \"tokens\": " + std::to_string(info.dataTokens) +
                ", \"offset\": " + std::to_string(info.dataOffset) +
                ", \"windows\": " + std::to_string(info.dataWindows) +
                ", \"shuffle\": " + (info.shuffle ? "true" : "false") + "}";
  else
    manifest += ",\n  \"data\": null";
  manifest += ",\n  \"schedule\": " + (info.schedule.empty() ? std::string("null") : info.schedule) +
              ",\n  \"file\": " + json::quote(name) +
              ",\n  \"file_bytes\": " + std::to_string(8 + header.size() + offset) +
              ",\n  \"tensors\": " + tensors + "\n}\n";
  std::string manifestTmp = dir + "/.checkpoint.json.tmp-" + pid;
  TXRT_RETURN_IF_ERROR(writeFileSynced(
      manifestTmp, {{reinterpret_cast<const uint8_t *>(manifest.data()), manifest.size()}},
      nullptr));
  maybeKill("manifest-written");
  if (::rename(manifestTmp.c_str(), (dir + "/" + kCheckpointManifest).c_str()) != 0)
    return Status::invalid("cannot rename '" + manifestTmp + "': " + errnoText());
  TXRT_RETURN_IF_ERROR(fsyncPath(dir, true));
  maybeKill("manifest-renamed");

  // Committed: older tensor files and leftovers of killed saves go.
  if (DIR *d = ::opendir(dir.c_str())) {
    std::vector<std::string> stale;
    while (struct dirent *e = ::readdir(d)) {
      std::string entry = e->d_name;
      if (entry != name && isOwnFile(entry))
        stale.push_back(entry);
    }
    ::closedir(d);
    for (const std::string &entry : stale)
      ::unlink((dir + "/" + entry).c_str());
  }
  maybeKill("cleaned");
  return Status();
}

/// The manifest |m|'s format, version and run fields into |info|.
static Status readManifestInfo(const json::Value &m, const std::string &where,
                               CheckpointInfo &info) {
  const json::Value *format = m.find("format");
  if (!format || format->text != "txopt-checkpoint")
    return Status::invalid(where + ": " + kCheckpointManifest + " is not a txopt checkpoint manifest");
  int64_t version = 0;
  const json::Value *v = m.find("format_version");
  if (!v || !v->asInt64(version) || version < 1 || version > kCheckpointFormatVersion)
    return Status::invalid(where + ": format_version " + (v ? json::serialize(*v) : "missing") +
                           " (this build reads 1.." + std::to_string(kCheckpointFormatVersion) + ")");
  auto field = [&](const char *key) -> const json::Value * { return m.find(key); };
  if (const json::Value *p = field("producer"))
    info.producer = p->text;
  if (const json::Value *r = field("recipe"))
    info.recipe = r->kind == json::Value::Kind::String ? r->text : json::serialize(*r);
  if (!field("step") || !field("step")->asInt64(info.step) || info.step < 0)
    return Status::invalid(where + ": the manifest has no valid 'step'");
  if (!field("seed") || !field("seed")->asUint64(info.seed))
    return Status::invalid(where + ": the manifest has no valid 'seed'");
  if (const json::Value *d = field("data"); d && d->kind == json::Value::Kind::Object) {
    info.hasData = true;
    if (const json::Value *f = d->find("file"))
      info.dataFile = f->text;
    const json::Value *tokens = d->find("tokens"), *offset = d->find("offset"),
                      *windows = d->find("windows"), *shuffle = d->find("shuffle");
    if (!tokens || !tokens->asUint64(info.dataTokens) || !offset ||
        !offset->asInt64(info.dataOffset) || !windows || !windows->asInt64(info.dataWindows))
      return Status::invalid(where + ": the manifest's 'data' lacks tokens/offset/windows");
    info.shuffle = shuffle && shuffle->kind == json::Value::Kind::Bool && shuffle->boolean;
  }
  if (const json::Value *s = field("schedule"))
    info.schedule = json::serialize(*s);
  return Status();
}

/// Manifest entry |entry| as a tensor: its name, role, dtype and shape,
/// checked against the safetensors |header| of |fileName| (its bytes
/// |bytes|, data from |dataStart|), its data and checksum.
static Status readTensor(const json::Value &entry, const json::Value &header,
                         const std::string &bytes, uint64_t dataStart,
                         const std::string &fileName, const std::string &where,
                         CheckpointTensor &t) {
  uint64_t dataBytes = bytes.size() - dataStart;
  const json::Value *name = entry.find("name");
  if (!name || name->kind != json::Value::Kind::String)
    return Status::invalid(where + ": a manifest tensor has no name");
  t.name = name->text;
  std::string what = where + ": tensor '" + t.name + "'";
  if (const json::Value *role = entry.find("role"))
    t.role = role->text;
  if (const json::Value *sites = entry.find("sites")) {
    if (sites->kind != json::Value::Kind::Array)
      return Status::invalid(what + ": the manifest's 'sites' is not a list");
    for (const json::Value &site : sites->array) {
      if (site.kind != json::Value::Kind::String)
        return Status::invalid(what + ": the manifest's 'sites' holds a non-string");
      t.sites.push_back(site.text);
    }
  }
  const json::Value *dtype = entry.find("dtype");
  t.dtype = dtype ? dtype->text : "";
  if (!safetensorsDTypeSize(t.dtype))
    return Status::invalid(what + ": unknown dtype '" + t.dtype + "'");
  if (!readShape(entry.find("shape"), t.shape).ok())
    return Status::invalid(what + ": the manifest has no valid shape");
  if (!t.sites.empty() && (t.shape.empty() || t.shape[0] != static_cast<int64_t>(t.sites.size())))
    return Status::invalid(what + ": the manifest names " + std::to_string(t.sites.size()) +
                           " cast sites for " + shapeText(t.shape) + " (one per row)");
  const json::Value *stored = header.find(t.name);
  if (!stored)
    return Status::invalid(what + " is in the manifest but not in '" + fileName + "'");
  std::vector<int64_t> fileShape;
  const json::Value *fileDtype = stored->find("dtype");
  if (!fileDtype || fileDtype->text != t.dtype ||
      !readShape(stored->find("shape"), fileShape).ok() || fileShape != t.shape)
    return Status::invalid(what + ": '" + fileName + "' holds " +
                           (fileDtype ? fileDtype->text : "?") + " " + shapeText(fileShape) +
                           ", the manifest says " + t.dtype + " " + shapeText(t.shape));
  const json::Value *offsets = stored->find("data_offsets");
  uint64_t begin = 0, end = 0, elements = 0;
  if (!offsets || offsets->kind != json::Value::Kind::Array || offsets->array.size() != 2 ||
      !offsets->array[0].asUint64(begin) || !offsets->array[1].asUint64(end) || end < begin ||
      !elementsOf(t.shape, elements) || end - begin != elements * safetensorsDTypeSize(t.dtype))
    return Status::invalid(what + ": bad data_offsets in '" + fileName + "'");
  if (end > dataBytes)
    return Status::invalid(what + ": '" + fileName + "' is truncated (the tensor ends at byte " +
                           std::to_string(dataStart + end) + " of " +
                           std::to_string(bytes.size()) + ")");
  t.bytes.assign(bytes.begin() + static_cast<std::ptrdiff_t>(dataStart + begin),
                 bytes.begin() + static_cast<std::ptrdiff_t>(dataStart + end));
  const json::Value *sum = entry.find("fnv1a64");
  std::string computed = hex64(fnv1a64(t.bytes.data(), t.bytes.size()));
  if (!sum || sum->text != computed)
    return Status::invalid(what + ": checksum mismatch (manifest fnv1a64 " +
                           (sum ? sum->text : "missing") + ", data " + computed +
                           "): the checkpoint is corrupted");
  return Status();
}

Status loadCheckpoint(const std::string &dir, Checkpoint &out) {
  out = Checkpoint();
  std::string where = "checkpoint '" + dir + "'";
  std::string manifestPath = dir + "/" + kCheckpointManifest;
  struct stat st;
  if (::stat(manifestPath.c_str(), &st) != 0)
    return Status::invalid(where + ": no " + kCheckpointManifest +
                           " (not a checkpoint folder, or no save finished)");
  std::string text;
  TXRT_RETURN_IF_ERROR(readWholeFile(manifestPath, text));
  json::Value m;
  TXRT_RETURN_IF_ERROR(json::parse(text, m).withContext(where + ": " + kCheckpointManifest));
  TXRT_RETURN_IF_ERROR(readManifestInfo(m, where, out.info));
  auto field = [&](const char *key) -> const json::Value * { return m.find(key); };
  const json::Value *file = field("file");
  if (!file || file->kind != json::Value::Kind::String || file->text.empty() ||
      file->text.find('/') != std::string::npos)
    return Status::invalid(where + ": the manifest names no tensor file");
  const json::Value *list = field("tensors");
  if (!list || list->kind != json::Value::Kind::Array)
    return Status::invalid(where + ": the manifest has no 'tensors' list");

  std::string dataPath = dir + "/" + file->text;
  std::string bytes;
  TXRT_RETURN_IF_ERROR(readWholeFile(dataPath, bytes).withContext(where));
  uint64_t promised = 0;
  if (const json::Value *size = field("file_bytes"); size && size->asUint64(promised) &&
                                                      promised != bytes.size())
    return Status::invalid(where + ": '" + file->text + "' has " + std::to_string(bytes.size()) +
                           " bytes, but the manifest says " + std::to_string(promised) +
                           (bytes.size() < promised ? " (truncated)" : " (replaced?)"));
  if (bytes.size() < 8)
    return Status::invalid(where + ": '" + file->text + "' is truncated (" +
                           std::to_string(bytes.size()) + " bytes)");
  uint64_t headerLength = 0;
  for (int i = 0; i < 8; ++i)
    headerLength |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  if (headerLength > bytes.size() - 8)
    return Status::invalid(where + ": '" + file->text + "' is truncated: its header needs " +
                           std::to_string(headerLength) + " bytes, the file holds " +
                           std::to_string(bytes.size() - 8));
  json::Value header;
  TXRT_RETURN_IF_ERROR(json::parse(bytes.substr(8, headerLength), header)
                           .withContext(where + ": the safetensors header of '" + file->text + "'"));
  if (header.kind != json::Value::Kind::Object)
    return Status::invalid(where + ": the safetensors header is not an object");
  uint64_t dataStart = 8 + headerLength;

  for (const json::Value &entry : list->array) {
    CheckpointTensor t;
    TXRT_RETURN_IF_ERROR(readTensor(entry, header, bytes, dataStart, file->text, where, t));
    if (out.find(t.name))
      return Status::invalid(where + ": tensor '" + t.name + "' appears twice in the manifest");
    out.tensors.push_back(std::move(t));
  }
  return Status();
}

/// Whether |a| and |b| are the same JSON value: numbers by value (0.9 and
/// 0.90000000000000002 are one double; integer literals exactly), objects
/// member by member in any order.
static bool sameJson(const json::Value &a, const json::Value &b) {
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case json::Value::Kind::Null: return true;
  case json::Value::Kind::Bool: return a.boolean == b.boolean;
  case json::Value::Kind::String: return a.text == b.text;
  case json::Value::Kind::Number:
    if (a.isInteger() && b.isInteger())
      return a.text == b.text; // exact past 2^53
    return a.number == b.number;
  case json::Value::Kind::Array:
    if (a.array.size() != b.array.size())
      return false;
    for (size_t i = 0; i < a.array.size(); ++i)
      if (!sameJson(a.array[i], b.array[i]))
        return false;
    return true;
  case json::Value::Kind::Object:
    if (a.object.size() != b.object.size())
      return false;
    for (const auto &[key, value] : a.object) {
      const json::Value *other = b.find(key);
      if (!other || !sameJson(value, *other))
        return false;
    }
    return true;
  }
  return false;
}

std::vector<uint8_t> shardOfWhole(const std::vector<uint8_t> &whole, size_t shardBytes,
                                  unsigned rank) {
  std::vector<uint8_t> shard(shardBytes, 0);
  size_t begin = static_cast<size_t>(rank) * shardBytes;
  if (begin < whole.size())
    std::memcpy(shard.data(), whole.data() + begin, std::min(shardBytes, whole.size() - begin));
  return shard;
}

Status wholeFromShards(const std::vector<uint8_t> &shards, size_t wholeBytes,
                       std::vector<uint8_t> &whole) {
  if (shards.size() < wholeBytes)
    return Status::invalid("the ranks' shards hold " + std::to_string(shards.size()) +
                           " bytes, fewer than the whole tensor's " +
                           std::to_string(wholeBytes));
  whole.assign(shards.begin(), shards.begin() + static_cast<std::ptrdiff_t>(wholeBytes));
  return Status();
}

Status checkCompatible(const Checkpoint &checkpoint, const std::string &recipe,
                       const std::vector<TensorSpec> &expected,
                       std::vector<std::string> *warnings) {
  const std::string where = "the checkpoint (step " + std::to_string(checkpoint.info.step) +
                            ", written by " + checkpoint.info.producer + ")";
  json::Value mine, theirs;
  bool parsedMine = json::parse(recipe.empty() ? "{}" : recipe, mine).ok() &&
                    mine.kind == json::Value::Kind::Object;
  bool parsedTheirs =
      json::parse(checkpoint.info.recipe.empty() ? "{}" : checkpoint.info.recipe, theirs).ok() &&
      theirs.kind == json::Value::Kind::Object;
  if (parsedMine && parsedTheirs) {
    auto differs = [&](const json::Value &a, const json::Value &b, bool mineFirst) -> Status {
      // The most telling keys first.
      std::vector<std::pair<std::string, json::Value>> members;
      for (const char *first : {"optimizer", "loss", "forward"})
        if (const json::Value *v = a.find(first))
          members.emplace_back(first, *v);
      for (const auto &member : a.object)
        if (member.first != "optimizer" && member.first != "loss" && member.first != "forward")
          members.push_back(member);
      for (const auto &[key, value] : members) {
        // lr is a run-time input, not part of the state's meaning; the rank
        // count neither: the checkpoint holds sharded state whole.
        if (key == "lr" || key == "data_parallel")
          continue;
        const json::Value *other = b.find(key);
        std::string here = json::serialize(value);
        std::string there = other ? json::serialize(*other) : "absent";
        if (!other || !sameJson(value, *other))
          return Status::invalid(where + " is from another recipe: '" + key + "' is " +
                                 (mineFirst ? there : here) + " there and " +
                                 (mineFirst ? here : there) + " in this step");
      }
      return Status();
    };
    TXRT_RETURN_IF_ERROR(differs(mine, theirs, true));
    TXRT_RETURN_IF_ERROR(differs(theirs, mine, false));
  } else if (recipe != checkpoint.info.recipe) {
    return Status::invalid(where + " is from another recipe: " + checkpoint.info.recipe +
                           " there, " + recipe + " in this step");
  }
  for (const TensorSpec &spec : expected) {
    const CheckpointTensor *t = checkpoint.find(spec.name);
    if (!t)
      return Status::invalid(where + " has no tensor '" + spec.name +
                             "' (another model?)");
    // Rows of packed FP8 state first: a step with other cast sites (another
    // --fp8-exclude or --fp8-format) would apply each row to another tensor,
    // and a different count is told better by the first differing site.
    if (!spec.sites.empty() && t->sites.empty()) {
      if (warnings)
        warnings->push_back("tensor '" + spec.name + "' of " + where +
                            " records no cast sites (saved before they were): its " +
                            std::to_string(spec.sites.size()) +
                            " rows are taken to be this step's sites in order");
    } else if (spec.sites.empty() && !t->sites.empty()) {
      // A step compiled before the site lists (an older artifact).
      if (warnings)
        warnings->push_back("this step records no cast sites for tensor '" + spec.name +
                            "' (compiled before they were; recompile to have them "
                            "checked): the checkpoint's " + std::to_string(t->sites.size()) +
                            " rows are taken in order");
    } else if (t->sites != spec.sites) {
      size_t row = 0;
      while (row < t->sites.size() && row < spec.sites.size() && t->sites[row] == spec.sites[row])
        ++row;
      auto siteAt = [&](const std::vector<std::string> &sites) {
        return row < sites.size() ? "'" + sites[row] + "'" : std::string("no site");
      };
      return Status::invalid(where + ": tensor '" + spec.name + "' row " + std::to_string(row) +
                             " is FP8 cast site " + siteAt(t->sites) + " there and " +
                             siteAt(spec.sites) + " in this step (" +
                             std::to_string(t->sites.size()) + " vs " +
                             std::to_string(spec.sites.size()) +
                             " sites: compiled with other FP8 options?)");
    }
    if (t->dtype != spec.dtype || t->shape != spec.shape)
      return Status::invalid(where + ": tensor '" + spec.name + "' is " + t->dtype + " " +
                             shapeText(t->shape) + ", but this step's is " + spec.dtype + " " +
                             shapeText(spec.shape) + " (another model?)");
  }
  for (const CheckpointTensor &t : checkpoint.tensors) {
    bool known = false;
    for (const TensorSpec &spec : expected)
      known |= spec.name == t.name;
    if (!known)
      return Status::invalid(where + " has tensor '" + t.name +
                             "', which this step does not have (another model?)");
  }
  return Status();
}

} // namespace txrt
