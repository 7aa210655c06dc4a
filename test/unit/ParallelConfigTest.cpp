//===- ParallelConfigTest.cpp - config grid and checks --------------------===//

#include "soap/graph/ParallelConfig.h"

#include <gtest/gtest.h>

using namespace soap;

namespace {

TEST(ParallelConfig, TasksAreRowMajor) {
  ParallelConfig config{{2, 3}, {0, 1, 2, 3, 4, 5}};
  EXPECT_EQ(config.numTasks(), 6);
  EXPECT_EQ(config.taskCoordinates(0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(config.taskCoordinates(4), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(config.taskCoordinates(5), (std::vector<int64_t>{1, 2}));
  for (int64_t task = 0; task < config.numTasks(); ++task)
    EXPECT_EQ(config.taskIndex(config.taskCoordinates(task)), task);
}

TEST(ParallelConfig, ShardSizes) {
  ParallelConfig config{{2, 1, 4}, {0, 1, 2, 3, 4, 5, 6, 7}};
  EXPECT_EQ(config.shardSizes({64, 10, 32}),
            (std::vector<int64_t>{32, 10, 8}));
}

TEST(ParallelConfig, EmptyDegreesIsOneTask) {
  ParallelConfig config{{}, {3}};
  EXPECT_EQ(config.numTasks(), 1);
  EXPECT_FALSE(checkConfigShape({}, 1));
}

TEST(CheckConfigShape, DegreeBelowOne) {
  auto problem = checkConfigShape({2, 0}, 0);
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem, "degree 0 of dimension 1 must be at least 1");
}

TEST(CheckConfigShape, DeviceCount) {
  auto problem = checkConfigShape({2, 2}, 3);
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem, "config lists 3 devices but its degrees [2, 2] make 4 tasks");
  EXPECT_FALSE(checkConfigShape({2, 2}, 4));
}

TEST(CheckConfigDevices, Range) {
  EXPECT_FALSE(checkConfigDevices({0, 7, 3}, 8));
  auto problem = checkConfigDevices({0, 8}, 8);
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem,
            "device 8 of task 1 is out of range: the module declares 8 devices");
  EXPECT_TRUE(checkConfigDevices({-1}, 8));
}

TEST(CheckConfigForLoops, Divisibility) {
  EXPECT_FALSE(checkConfigForLoops({2, 4, 1}, {64, 32, 7}, {"m", "n", "k"}));
  auto problem = checkConfigForLoops({1, 3, 1}, {64, 32, 7}, {"m", "n", "k"});
  ASSERT_TRUE(problem);
  EXPECT_EQ(*problem, "degree 3 does not divide dimension 1 ('n') of size 32");
}

TEST(CheckConfigForLoops, CountAndDynamic) {
  auto count = checkConfigForLoops({2}, {64, 32}, {});
  ASSERT_TRUE(count);
  EXPECT_EQ(*count, "config has 1 degree but the op has 2 dimensions");
  auto dynamic = checkConfigForLoops({2, 1}, {-1, 32}, {});
  ASSERT_TRUE(dynamic);
  EXPECT_EQ(*dynamic, "degree 2 cannot split dimension 0 of dynamic size");
  EXPECT_FALSE(checkConfigForLoops({1, 2}, {-1, 32}, {}));
}

TEST(FormatList, Brackets) {
  EXPECT_EQ(formatList({}), "[]");
  EXPECT_EQ(formatList({1, -2, 3}), "[1, -2, 3]");
}

} // namespace
