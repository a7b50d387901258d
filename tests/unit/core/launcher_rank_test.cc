#include "common/launcher_rank.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace hybridprof {
namespace {

class LauncherRank : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) unsetenv(name);
  }
};

TEST_F(LauncherRank, NoneOutsideALauncher) { EXPECT_EQ(launcher_rank_from_env(), -1); }

TEST_F(LauncherRank, EachLaunchersVariableAndOpenMpiFirst) {
  setenv("SLURM_PROCID", "5", 1);
  EXPECT_EQ(launcher_rank_from_env(), 5);
  setenv("PMI_RANK", "3", 1);
  EXPECT_EQ(launcher_rank_from_env(), 3);
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  EXPECT_EQ(launcher_rank_from_env(), 0);
}

TEST_F(LauncherRank, WhatIsNotARankIsSkipped) {
  setenv("OMPI_COMM_WORLD_RANK", "", 1);
  setenv("PMIX_RANK", "2x", 1);
  setenv("PMI_RANK", "-4", 1);
  EXPECT_EQ(launcher_rank_from_env(), -1);
  setenv("SLURM_PROCID", "12", 1);
  EXPECT_EQ(launcher_rank_from_env(), 12);
}

}  // namespace
}  // namespace hybridprof
