//===- StepTracesTest.cpp - soap-profile --run's reading of step traces ---===//

#include "StepTraces.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace soap;
using namespace soap::profile;

namespace {

/// A Chrome trace as the executable writes it: steps on thread 0, kernels
/// (with their id) and copies on thread 1, communication on thread 2.
std::string writeTrace(const std::string &events) {
  llvm::SmallString<128> path;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("soap-step", "json", path));
  std::ofstream(path.c_str()) << "{\"traceEvents\": [" << events << "]}";
  return path.str().str();
}

std::string event(const std::string &name, int tid, double ts, double dur,
                  const std::string &args = "") {
  return "{\"ph\": \"X\", \"pid\": 0, \"tid\": " + std::to_string(tid) +
         ", \"name\": \"" + name + "\", \"cat\": \"" +
         (tid == 0   ? "step"
          : tid == 2 ? "comm"
                     : "op") +
         "\", \"ts\": " + std::to_string(ts) +
         ", \"dur\": " + std::to_string(dur) + ", \"args\": {" + args + "}}";
}

} // namespace

// The time between a rank's events (dispatch, guards, allocation) is work
// for the next kernel, and so is a send's own time; a receive's wait and a
// collective are not; after the last kernel, the rest of the step is that
// kernel's. So a rank's kernels add up to its step less its waits and
// collectives.
TEST(StepTraces, KernelsTakeTheDispatchAroundThem) {
  std::string path = writeTrace(
      event("step", 0, 0, 100) + "," +
      event("linalg.matmul (m.mlir:1:1)", 1, 10, 20, "\"id\": 1") + "," +
      event("soap.recv", 2, 30, 20, "\"bytes\": 64") + "," +
      event("soap.send", 2, 52, 1, "\"bytes\": 64") + "," +
      event("linalg.generic (m.mlir:2:1)", 1, 55, 5, "\"id\": 2") + "," +
      event("step", 0, 200, 60) + "," +
      event("linalg.matmul (m.mlir:1:1)", 1, 200, 30, "\"id\": 1") + "," +
      event("soap.all_gather", 2, 230, 10, "\"bytes\": 64, \"ranks\": 2") +
      "," + event("linalg.generic (m.mlir:2:1)", 1, 245, 5, "\"id\": 2"));
  StepSamples samples;
  std::string error;
  ASSERT_TRUE(readRunTraces({path}, samples, error)) << error;
  llvm::sys::fs::remove(path);
  ASSERT_EQ(samples.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(samples.steps[0], 100e-6);
  EXPECT_DOUBLE_EQ(samples.steps[1], 60e-6);
  ASSERT_EQ(samples.ranks.size(), 1u);
  const StepSamples::Rank &rank = samples.ranks[0];
  // 10 us before it, then 20 of its own; in the second step, 30.
  EXPECT_NEAR(rank.kernels.at(1)[0], 30e-6, 1e-12);
  EXPECT_NEAR(rank.kernels.at(1)[1], 30e-6, 1e-12);
  // 2 before the send, the send's 1, 2 after it, its own 5 and the 40 to
  // the step's end; then 5 after the all-gather, 5, and 10 to the end.
  EXPECT_NEAR(rank.kernels.at(2)[0], 50e-6, 1e-12);
  EXPECT_NEAR(rank.kernels.at(2)[1], 20e-6, 1e-12);
  auto gather =
      rank.collectives.at(CollectiveSize{CollectiveKind::AllGather, 64, 2});
  EXPECT_NEAR(gather.first[1], 10e-6, 1e-12);
  EXPECT_EQ(gather.second[0], 0);
  EXPECT_EQ(gather.second[1], 1);
}

TEST(StepTraces, RanksMustRunTheSameSteps) {
  std::string one = writeTrace(event("step", 0, 0, 10));
  std::string two =
      writeTrace(event("step", 0, 0, 10) + "," + event("step", 0, 20, 10));
  StepSamples samples;
  std::string error;
  EXPECT_FALSE(readRunTraces({one, two}, samples, error));
  EXPECT_NE(error.find("2 step(s), rank 0 ran 1"), std::string::npos) << error;
  llvm::sys::fs::remove(one);
  llvm::sys::fs::remove(two);
}
