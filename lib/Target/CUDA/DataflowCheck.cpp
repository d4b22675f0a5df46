//===- DataflowCheck.cpp - the command list checked against its memory plan -===//
//
// SPDX-License-Identifier: Apache-2.0
// The lowering decides the order of the commands (deferred column sums,
// sums held back until after the optimizer, recomputes moved into column
// sums, gathers written in place) and the memory plan reuses a buffer's
// bytes once its last command has run. A slip in either is a step that
// reads a value before it is computed, or after another buffer was placed
// over it: wrong numbers on the GPU, and nothing on a machine without one
// would notice. So every lowered program is checked here, on the bytes of
// the plan, before it is written:
//
//   - a command reads only bytes that, since its function began, the
//     buffer it reads was the last to write (or that are persistent:
//     arguments, constants, offset tables);
//   - an asynchronous collective group (bucketed gradient reduce-scatters,
//     which the runtime runs beside the commands after it) has its inputs
//     ready where it starts; until the Join that waits for it, no command
//     reads the bytes it writes or writes the bytes it reads or writes, and
//     its writes count only from the Join on; every group is joined before
//     its function ends.
//
// A launch's outputs are writes and its inputs reads; a GEMM reads its D
// when it accumulates; the buffers a packed kernel reaches through its
// offset table may be read or written, so they are checked as reads only
// when their function wrote them before (nothing written over them since).
// A violation is an internal error naming both commands, never a warning.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include <map>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

namespace {

/// Who last wrote each byte range of the arena: start -> (end, root buffer).
class ArenaOwners {
public:
  void assign(uint64_t begin, uint64_t end, int owner) {
    if (begin >= end)
      return;
    split(begin);
    split(end);
    owners_.erase(owners_.lower_bound(begin), owners_.lower_bound(end));
    owners_[begin] = {end, owner};
  }

  /// The first owner other than |wanted| over [begin, end): -1 where
  /// nobody wrote the bytes; std::nullopt when |wanted| holds all of them.
  std::optional<int> otherOwner(uint64_t begin, uint64_t end, int wanted) const {
    auto it = owners_.upper_bound(begin);
    if (it != owners_.begin() && std::prev(it)->second.first > begin)
      --it;
    for (uint64_t at = begin; at < end; ++it) {
      if (it == owners_.end() || it->first > at)
        return -1;
      if (it->second.second != wanted)
        return it->second.second;
      at = it->second.first;
    }
    return std::nullopt;
  }

  void clear() { owners_.clear(); }

private:
  /// Splits the range containing |at| so that one starts there.
  void split(uint64_t at) {
    auto it = owners_.upper_bound(at);
    if (it == owners_.begin())
      return;
    --it;
    auto [end, owner] = it->second;
    if (it->first == at || end <= at)
      return;
    it->second.first = at;
    owners_[at] = {end, owner};
  }

  std::map<uint64_t, std::pair<uint64_t, int>> owners_;
};

/// A byte range of the arena.
struct Range {
  uint64_t begin = 0, end = 0;
  bool overlaps(const Range &other) const {
    return begin < other.end && other.begin < end;
  }
};

/// An asynchronous collective group between its start and its Join.
struct RunningGroup {
  unsigned id = 0;
  size_t firstCommand = 0;
  std::vector<Range> reads;
  std::vector<std::pair<Range, unsigned>> writes; ///< range, buffer written
};

struct Checker {
  const LoweringContext &ctx;
  const std::vector<Slot> &slots;
  ArenaOwners owners;
  std::vector<RunningGroup> running;
  /// The command that last wrote each root buffer, for the message.
  std::vector<int> lastWriter;

  explicit Checker(const LoweringContext &ctx)
      : ctx(ctx), slots(ctx.program.slots), lastWriter(ctx.buffers.size(), -1) {}

  int root(unsigned buffer) const {
    int b = static_cast<int>(buffer);
    while (ctx.buffers[b].partOf >= 0)
      b = ctx.buffers[b].partOf;
    return b;
  }

  std::string describe(int buffer) const {
    if (buffer < 0)
      return "nothing";
    return "slot " + std::to_string(buffer) + " ('" + ctx.buffers[buffer].what + "')";
  }

  std::string describeCommand(size_t index) const {
    return "command " + std::to_string(index) + " (" +
           ctx.program.commands[index].origin + ")";
  }

  Range rangeOf(unsigned buffer) const {
    return {slots[buffer].offset, slots[buffer].offset + slots[buffer].bytes};
  }

  /// |command| reads (or, when |writes|, writes) |buffer| while groups run.
  LogicalResult checkAgainstRunning(size_t command, unsigned buffer, bool writes,
                                    Operation *anchor) const {
    Range range = rangeOf(buffer);
    for (const RunningGroup &group : running) {
      bool clash = llvm::any_of(group.writes, [&](const auto &w) {
        return w.first.overlaps(range);
      });
      if (writes)
        clash |= llvm::any_of(group.reads, [&](const Range &r) { return r.overlaps(range); });
      if (clash)
        return anchor->emitError("internal error in the GPU lowering: ")
               << describeCommand(command) << (writes ? " writes " : " reads ")
               << describe(root(buffer)) << " while asynchronous collective group "
               << group.id << " (from " << describeCommand(group.firstCommand)
               << ") may still be using its bytes; it needs a join before it";
    }
    return success();
  }

  /// Ends the function: every group must have been joined.
  LogicalResult endFunction(Operation *anchor) {
    if (running.empty())
      return success();
    return anchor->emitError("internal error in the GPU lowering: asynchronous collective "
                             "group ")
           << running.front().id << " (from " << describeCommand(running.front().firstCommand)
           << ") is never joined before its function ends";
  }

  /// Every persistent buffer holds its own bytes as a function begins.
  void beginFunction() {
    owners.clear();
    std::fill(lastWriter.begin(), lastWriter.end(), -1);
    for (size_t i = 0; i < ctx.buffers.size(); ++i)
      if (ctx.buffers[i].persistent && ctx.buffers[i].partOf < 0)
        owners.assign(slots[i].offset, slots[i].offset + slots[i].bytes, static_cast<int>(i));
  }

  /// Another buffer (|other| >= 0), not |r|, owns some of |buffer|'s bytes;
  /// -1 where nobody wrote them; std::nullopt when |r| owns them all.
  std::optional<int> otherOwnerOf(unsigned buffer, int r) const {
    const Slot &slot = slots[buffer];
    return owners.otherOwner(slot.offset, slot.offset + slot.bytes, r);
  }

  /// The error for |command| doing |what| (reading a buffer) whose bytes
  /// |other| was written over.
  LogicalResult overwritten(size_t command, const std::string &what, int other,
                            Operation *anchor) const {
    return anchor->emitError("internal error in the GPU lowering: ")
           << describeCommand(command) << " " << what << ", but "
           << (lastWriter[other] >= 0 ? describeCommand(lastWriter[other])
                                      : std::string("an argument"))
           << " wrote " << describe(other)
           << " over its bytes after it was written (the memory plan reused them too early)";
  }

  LogicalResult read(size_t command, unsigned buffer, Operation *anchor) {
    // An empty tensor's buffer (a step over zero rows) holds nothing to
    // read; its slot still takes the smallest size.
    if (ctx.buffers[buffer].empty)
      return success();
    int r = root(buffer);
    std::optional<int> other = otherOwnerOf(buffer, r);
    if (!other)
      return success();
    if (*other < 0)
      return anchor->emitError("internal error in the GPU lowering: ")
             << describeCommand(command) << " reads " << describe(r)
             << ", and part of its bytes no command of its function has written yet";
    return overwritten(command, "reads " + describe(r), *other, anchor);
  }

  /// A buffer a packed kernel reaches through its table: it may be read or
  /// only written, so it is checked only when its function has written it
  /// before: then nothing else may have been written over it since.
  LogicalResult throughTable(size_t command, unsigned buffer, Operation *anchor) {
    int r = root(buffer);
    if (lastWriter[r] < 0)
      return success();
    std::optional<int> other = otherOwnerOf(buffer, r);
    if (!other || *other < 0)
      return success();
    return overwritten(command, "reaches " + describe(r) + " through its table", *other,
                       anchor);
  }

  void write(size_t command, unsigned buffer) {
    int r = root(buffer);
    const Slot &slot = slots[buffer];
    owners.assign(slot.offset, slot.offset + slot.bytes, r);
    lastWriter[r] = static_cast<int>(command);
  }
};

} // namespace

LogicalResult cuda::checkCommandDataflow(const LoweringContext &ctx,
                                         llvm::ArrayRef<size_t> functionBegins,
                                         Operation *anchor) {
  const std::vector<Command> &commands = ctx.program.commands;
  if (ctx.commandUses.size() != commands.size())
    return anchor->emitError("internal error in the GPU lowering: ")
           << commands.size() << " commands but the uses of " << ctx.commandUses.size();
  Checker checker(ctx);
  size_t next = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    if (next < functionBegins.size() && functionBegins[next] == i) {
      if (failed(checker.endFunction(anchor)))
        return failure();
      checker.beginFunction();
      while (next < functionBegins.size() && functionBegins[next] == i)
        ++next;
    }
    if (auto *join = std::get_if<JoinCmd>(&commands[i].op)) {
      // Groups up to this one are done: their writes land now.
      auto done = [&](const RunningGroup &g) { return g.id <= join->group; };
      for (const RunningGroup &group : checker.running)
        if (done(group))
          for (auto &[range, buffer] : group.writes)
            checker.write(i, buffer);
      llvm::erase_if(checker.running, done);
      continue;
    }
    const CommandUses &uses = ctx.commandUses[i];
    std::vector<unsigned> written(uses.writes.begin(), uses.writes.end());
    if (auto *launch = std::get_if<LaunchCmd>(&commands[i].op)) {
      for (unsigned buffer : launch->through)
        if (failed(checker.throughTable(i, buffer, anchor)))
          return failure();
      written.insert(written.end(), launch->through.begin(), launch->through.end());
    }
    auto *collective = std::get_if<CollectiveCmd>(&commands[i].op);
    for (unsigned buffer : uses.reads)
      if (failed(checker.checkAgainstRunning(i, buffer, /*writes=*/false, anchor)) ||
          failed(checker.read(i, buffer, anchor)))
        return failure();
    for (unsigned buffer : written)
      if (failed(checker.checkAgainstRunning(i, buffer, /*writes=*/true, anchor)))
        return failure();
    if (collective && collective->asyncGroup) {
      if (checker.running.empty() || checker.running.back().id != collective->asyncGroup)
        checker.running.push_back({collective->asyncGroup, i, {}, {}});
      RunningGroup &group = checker.running.back();
      for (unsigned buffer : uses.reads)
        group.reads.push_back(checker.rangeOf(buffer));
      for (unsigned buffer : written)
        group.writes.push_back({checker.rangeOf(buffer), buffer});
      continue;
    }
    for (unsigned buffer : written)
      checker.write(i, buffer);
  }
  return checker.endFunction(anchor);
}
