// AcceptBalance: the workers' connection counts in shared memory, which an acceptor reads to
// leave a connection to the worker holding the fewest. A worker counts from its fork until it
// stops accepting, one that kept a connection waiting is passed over until it accepts again,
// and a reaped worker's place is freed for the next.
#include "accept_balance.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

namespace portico::backend {
namespace {

TEST(AcceptBalance, TheFewestAmongThoseThatAccept) {
  AcceptBalance table(4);
  ASSERT_TRUE(table.ok());
  auto a = table.member(table.reserve());
  a->accepted(1);
  EXPECT_EQ(a->fewer_than(1), -1); // alone
  auto b = table.member(table.reserve());
  auto c = table.member(table.reserve());
  ASSERT_TRUE(a && b && c);
  // b and c are being forked: they count already, so that a burst leaves them their share.
  EXPECT_EQ(a->fewer_than(1), 1);
  b->accepted(1);
  EXPECT_EQ(a->fewer_than(1), 2); // c, holding none
  EXPECT_EQ(a->fewer_than(2), 2); // c rather than b
  EXPECT_EQ(c->fewer_than(0), -1);
  c->accepted(1);
  EXPECT_EQ(a->fewer_than(1), -1); // equal is not fewer
  a->closed(0);
  EXPECT_EQ(b->fewer_than(1), 0);
  a->stop_accepting(); // draining: never waited for
  EXPECT_EQ(b->fewer_than(1), -1);
}

TEST(AcceptBalance, OneThatKeptAConnectionWaitingIsPassedOverUntilItAccepts) {
  AcceptBalance table(4);
  auto a = table.member(table.reserve());
  auto b = table.member(table.reserve());
  a->accepted(3);
  uint64_t seen = a->accepted_by(1);
  EXPECT_EQ(a->fewer_than(3), 1);
  a->pass_over(1); // b took none while a waited
  EXPECT_EQ(a->accepted_by(1), seen);
  EXPECT_EQ(a->fewer_than(3), -1);
  b->accepted(1); // it runs again
  EXPECT_EQ(a->accepted_by(1), seen + 1);
  EXPECT_EQ(a->fewer_than(3), 1);
}

TEST(AcceptBalance, AReapedWorkersPlaceIsFreedAndReused) {
  AcceptBalance table(2);
  auto a = table.member(table.reserve());
  int place = table.reserve();
  EXPECT_EQ(place, 1);
  EXPECT_EQ(table.reserve(), -1); // full: that worker accepts without asking
  EXPECT_EQ(table.member(-1), nullptr);
  EXPECT_EQ(a->fewer_than(3), 1);
  table.release(place); // killed: it never said it stopped accepting
  EXPECT_EQ(a->fewer_than(3), -1);
  table.release(7); // out of range: ignored
  EXPECT_EQ(table.reserve(), 1);
  EXPECT_EQ(a->fewer_than(3), 1);
}

TEST(AcceptBalance, AForkedWorkersCountsReachTheOthers) {
  AcceptBalance table(4);
  auto parent = table.member(table.reserve());
  parent->accepted(5);
  int place = table.reserve();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto child = table.member(place);
    for (size_t held = 1; held <= 7; ++held)
      child->accepted(held);
    child->closed(6);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(parent->accepted_by(place), 7u); // written in the child
  EXPECT_EQ(parent->fewer_than(7), place);
  EXPECT_EQ(parent->fewer_than(6), -1);
  table.release(place);
  EXPECT_EQ(parent->fewer_than(7), -1);
}

} // namespace
} // namespace portico::backend
