#include "core/intrusive_list.h"

#include <gtest/gtest.h>
#include <vector>

namespace portico::core {
namespace {

struct Item {
  int v;
  ListHook<Item> a; // two lists at once, through two hooks
  ListHook<Item> b;
};
using ListA = IntrusiveList<Item, &Item::a>;
using ListB = IntrusiveList<Item, &Item::b>;

std::vector<int> values(const ListA& l) {
  std::vector<int> out;
  for (Item* i = l.front(); i; i = ListA::next(i))
    out.push_back(i->v);
  return out;
}

TEST(IntrusiveList, PushBothEndsAndWalk) {
  Item x{1}, y{2}, z{3};
  ListA l;
  EXPECT_TRUE(l.empty());
  l.push_back(&y);
  l.push_front(&x);
  l.push_back(&z);
  EXPECT_EQ(values(l), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(l.size(), 3u);
  EXPECT_EQ(l.front(), &x);
  EXPECT_EQ(l.back(), &z);
}

TEST(IntrusiveList, EraseAnywhereAndMembership) {
  Item x{1}, y{2}, z{3}, w{4};
  ListA l;
  for (Item* i : {&x, &y, &z})
    l.push_back(i);
  EXPECT_TRUE(l.erase(&y));
  EXPECT_EQ(values(l), (std::vector<int>{1, 3}));
  EXPECT_FALSE(l.contains(&y));
  EXPECT_FALSE(l.erase(&y)); // not in the list: nothing happens
  EXPECT_FALSE(l.erase(&w));
  EXPECT_TRUE(l.erase(&z));
  EXPECT_EQ(l.back(), &x);
  EXPECT_EQ(l.pop_front(), &x);
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(l.back(), nullptr);
  EXPECT_EQ(l.pop_front(), nullptr);
  EXPECT_EQ(l.size(), 0u);
}

TEST(IntrusiveList, TwoHooksAreTwoIndependentLists) {
  Item x{1}, y{2};
  ListA a;
  ListB b;
  a.push_back(&x);
  a.push_back(&y);
  b.push_back(&y);
  b.push_back(&x);
  a.erase(&x);
  EXPECT_EQ(values(a), (std::vector<int>{2}));
  EXPECT_EQ(b.front(), &y);
  EXPECT_EQ(ListB::next(&y), &x);
  EXPECT_TRUE(b.contains(&x));
}

} // namespace
} // namespace portico::core
