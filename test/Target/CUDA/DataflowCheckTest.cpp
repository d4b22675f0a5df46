//===- DataflowCheckTest.cpp - the plan's dataflow check on made-up plans --===//
//
// SPDX-License-Identifier: Apache-2.0
// The lowering never produces a plan the dataflow check refuses (every
// gpu-*.test compiles through it), so its refusals are shown here on small
// command lists written by hand: each case prints `ok` or the check's
// error, and dataflow-check.test matches them.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>

using namespace mlir;
using namespace mlir::txopt;
using namespace mlir::txopt::cuda;

namespace {

/// A hand-made plan: buffers at chosen offsets, and commands with their
/// reads and writes.
struct Plan {
  StepProgram program;
  GPUOptions options;
  LoweringContext ctx{program, gpu::GPUModuleOp(), options};

  unsigned buffer(uint64_t offset, uint64_t bytes, bool persistent = false,
                  int partOf = -1) {
    Buffer b;
    b.bytes = bytes;
    b.persistent = persistent;
    b.partOf = partOf;
    b.what = persistent ? "argument" : "temporary";
    ctx.buffers.push_back(b);
    program.slots.push_back({offset, bytes});
    return ctx.buffers.size() - 1;
  }

  void command(llvm::ArrayRef<unsigned> reads, llvm::ArrayRef<unsigned> writes,
               std::vector<unsigned> through = {}) {
    LaunchCmd launch;
    launch.kernel = 0;
    launch.through = std::move(through);
    program.commands.push_back(
        {launch, "op " + std::to_string(program.commands.size())});
    CommandUses uses;
    uses.reads.assign(reads.begin(), reads.end());
    uses.writes.assign(writes.begin(), writes.end());
    ctx.commandUses.push_back(uses);
  }

  /// A reduce-scatter from |src| to |dst| in asynchronous group |group|.
  void collective(unsigned src, unsigned dst, unsigned group) {
    CollectiveCmd cmd;
    cmd.kind = CollectiveCmd::Kind::ReduceScatter;
    cmd.src = src;
    cmd.dst = dst;
    cmd.asyncGroup = group;
    program.commands.push_back(
        {cmd, "collective " + std::to_string(program.commands.size())});
    ctx.commandUses.push_back({{src}, {dst}});
  }

  void join(unsigned group) {
    program.commands.push_back({JoinCmd{group}, "join"});
    ctx.commandUses.push_back({});
  }
};

void run(const char *name, Plan &plan, llvm::ArrayRef<size_t> functionBegins = {0}) {
  MLIRContext context;
  OpBuilder builder(&context);
  OwningOpRef<ModuleOp> anchor = ModuleOp::create(builder.getUnknownLoc());
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  bool ok = succeeded(checkCommandDataflow(plan.ctx, functionBegins, *anchor));
  std::printf("case %s: %s\n", name, ok ? "ok" : ("error: " + message).c_str());
}

} // namespace

int main() {
  {
    Plan p;
    unsigned a = p.buffer(256, 64), b = p.buffer(512, 64);
    p.command({}, {a});
    p.command({a}, {b});
    run("written-then-read", p);
  }
  {
    Plan p;
    unsigned a = p.buffer(256, 64);
    p.command({a}, {});
    run("read-before-write", p);
  }
  {
    // b placed over a while a is still to be read.
    Plan p;
    unsigned a = p.buffer(256, 64), b = p.buffer(256 + 32, 64);
    p.command({}, {a});
    p.command({}, {b});
    p.command({a}, {});
    run("reused-too-early", p);
  }
  {
    Plan p;
    unsigned arg = p.buffer(0, 64, /*persistent=*/true), a = p.buffer(256, 64);
    p.command({arg}, {a});
    run("persistent-read", p);
  }
  {
    // An argument written over by a temporary placed on it.
    Plan p;
    unsigned arg = p.buffer(0, 64, /*persistent=*/true), a = p.buffer(0, 64);
    p.command({}, {a});
    p.command({arg}, {});
    run("argument-overwritten", p);
  }
  {
    // Whole of two parts: read whole after only one part was written.
    Plan p;
    unsigned whole = p.buffer(256, 8);
    unsigned first = p.buffer(256, 4, false, static_cast<int>(whole));
    unsigned second = p.buffer(260, 4, false, static_cast<int>(whole));
    p.command({}, {first});
    p.command({whole}, {});
    p.command({}, {second});
    p.command({whole}, {});
    run("part-unwritten", p);
  }
  {
    Plan p;
    unsigned whole = p.buffer(256, 8);
    unsigned first = p.buffer(256, 4, false, static_cast<int>(whole));
    unsigned second = p.buffer(260, 4, false, static_cast<int>(whole));
    p.command({}, {first});
    p.command({}, {second});
    p.command({whole, first}, {});
    run("parts-written", p);
  }
  {
    // A temporary of the step read by the function after it.
    Plan p;
    unsigned a = p.buffer(256, 64);
    p.command({}, {a});
    p.command({a}, {});
    run("next-function", p, {0, 1});
  }
  {
    // A packed kernel's tensors count as written.
    Plan p;
    unsigned a = p.buffer(256, 64);
    p.command({}, {}, {a});
    p.command({a}, {});
    run("through-table", p);
  }
  {
    // A packed kernel reaching a written buffer that another was placed
    // over since.
    Plan p;
    unsigned a = p.buffer(256, 64), b = p.buffer(256, 64);
    p.command({}, {a});
    p.command({}, {b});
    p.command({}, {}, {a});
    run("through-table-clobbered", p);
  }
  {
    // A group overlapped with an unrelated command, its shard read after
    // the join.
    Plan p;
    unsigned g = p.buffer(256, 64), shard = p.buffer(512, 32), other = p.buffer(768, 64);
    p.command({}, {g});
    p.collective(g, shard, 1);
    p.command({}, {other});
    p.join(1);
    p.command({shard, other}, {});
    run("async-joined", p);
  }
  {
    Plan p;
    unsigned g = p.buffer(256, 64), shard = p.buffer(512, 32);
    p.command({}, {g});
    p.collective(g, shard, 1);
    p.command({shard}, {});
    p.join(1);
    run("async-read-before-join", p);
  }
  {
    // The gradient's bytes reused while the collective may still read them.
    Plan p;
    unsigned g = p.buffer(256, 64), shard = p.buffer(512, 32), reuse = p.buffer(256, 64);
    p.command({}, {g});
    p.collective(g, shard, 1);
    p.command({}, {reuse});
    p.join(1);
    run("async-input-overwritten", p);
  }
  {
    Plan p;
    unsigned g = p.buffer(256, 64), shard = p.buffer(512, 32);
    p.command({}, {g});
    p.collective(g, shard, 1);
    run("async-never-joined", p);
  }
  {
    // A later group's join covers the earlier group.
    Plan p;
    unsigned g1 = p.buffer(256, 64), s1 = p.buffer(512, 32);
    unsigned g2 = p.buffer(768, 64), s2 = p.buffer(1024, 32);
    p.command({}, {g1});
    p.collective(g1, s1, 1);
    p.command({}, {g2});
    p.collective(g2, s2, 2);
    p.join(2);
    p.command({s1, s2}, {});
    run("async-join-covers-earlier", p);
  }
  return 0;
}
