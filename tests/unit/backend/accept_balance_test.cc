// AcceptBalance: the workers' connection counts in shared memory, which an acceptor reads to
// leave a connection to a worker holding fewer. Only accepting workers count; a reaped worker's
// place is freed, and taken by the next.
#include "accept_balance.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

namespace portico::backend {
namespace {

TEST(AcceptBalance, AnotherHoldsFewerOnlyWhenItAccepts) {
  AcceptBalance table(4);
  ASSERT_TRUE(table.ok());
  auto a = table.join(101);
  auto b = table.join(102);
  ASSERT_TRUE(a && b);
  a->set_accepting(true);
  a->accepted(1);
  // b has not started its acceptors: a takes the next itself.
  EXPECT_FALSE(a->another_holds_fewer(1));
  b->set_accepting(true);
  EXPECT_TRUE(a->another_holds_fewer(1));
  EXPECT_FALSE(b->another_holds_fewer(0));
  b->accepted(1);
  EXPECT_FALSE(a->another_holds_fewer(1)); // equal is not fewer
  a->closed(0);
  EXPECT_TRUE(b->another_holds_fewer(1));
  a->set_accepting(false); // draining: never waited on
  EXPECT_FALSE(b->another_holds_fewer(1));
}

TEST(AcceptBalance, AcceptedByAllCountsEveryWorkersAccepts) {
  AcceptBalance table(4);
  auto a = table.join(101);
  auto b = table.join(102);
  uint64_t before = a->accepted_by_all();
  b->accepted(1);
  b->accepted(2);
  a->accepted(1);
  EXPECT_EQ(a->accepted_by_all(), before + 3);
  b->closed(1); // a close is not progress
  EXPECT_EQ(b->accepted_by_all(), before + 3);
}

TEST(AcceptBalance, AReapedWorkersPlaceIsFreedAndReused) {
  AcceptBalance table(2);
  auto a = table.join(101);
  auto b = table.join(102);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(table.join(103), nullptr); // full: that worker accepts without asking
  b->set_accepting(true);
  EXPECT_TRUE(a->another_holds_fewer(3));
  table.forget(102); // killed: it never said it stopped accepting
  EXPECT_FALSE(a->another_holds_fewer(3));
  auto c = table.join(103);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(a->another_holds_fewer(3)); // not accepting until its acceptors start
  table.forget(999);                       // no such worker: nothing changes
  c->set_accepting(true);
  EXPECT_TRUE(a->another_holds_fewer(3));
}

TEST(AcceptBalance, AForkedWorkersCountsReachTheOthers) {
  AcceptBalance table(4);
  auto parent = table.join(getpid());
  parent->set_accepting(true);
  parent->accepted(5);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto child = table.join(getpid());
    child->set_accepting(true);
    child->accepted(1);
    _exit(child ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(parent->another_holds_fewer(5)); // the child's place, written in the child
  table.forget(pid);
  EXPECT_FALSE(parent->another_holds_fewer(5));
}

} // namespace
} // namespace portico::backend
