#include "cache/memory_store.h"

#include <gtest/gtest.h>

namespace portico::cache {
namespace {

std::shared_ptr<StoredResponse> response(std::string vary_key, size_t body = 100) {
  auto r = std::make_shared<StoredResponse>();
  r->vary_key = std::move(vary_key);
  r->body = std::make_shared<StoredBody>();
  r->body->append(std::string(body, 'x'));
  r->body->finish(true);
  return r;
}

TEST(MemoryStore, AVariantWithTheSameSelectingFieldsReplacesTheOld) {
  MemoryStore s(1 << 20, 4);
  ASSERT_TRUE(s.put("k", response("+en")));
  ASSERT_TRUE(s.put("k", response("+de")));
  auto newer = response("+en");
  ASSERT_TRUE(s.put("k", newer));
  Variants* v = s.find("k");
  ASSERT_NE(v, nullptr);
  ASSERT_EQ(v->list.size(), 2u);
  EXPECT_EQ(v->list.front(), newer); // the newest first
  EXPECT_EQ(s.objects(), 2u);
}

TEST(MemoryStore, VariantsPerKeyAreBoundedTheOldestGoing) {
  MemoryStore s(1 << 20, 3);
  for (int i = 0; i < 10; ++i)
    s.put("k", response("+" + std::to_string(i)));
  Variants* v = s.find("k");
  ASSERT_EQ(v->list.size(), 3u);
  EXPECT_EQ(v->list.back()->vary_key, "+7");
  EXPECT_EQ(s.objects(), 3u);
}

TEST(MemoryStore, TheByteBoundHoldsWhateverIsPut) {
  MemoryStore s(256 * 1024, 4);
  for (int i = 0; i < 1000; ++i)
    s.put("key-" + std::to_string(i), response("", 2000));
  EXPECT_LE(s.used_bytes(), s.capacity());
  EXPECT_GT(s.counts().evictions, 0u);
  EXPECT_EQ(s.objects(), s.used_bytes() ? s.objects() : 0u);
  EXPECT_FALSE(s.put("huge", response("", 300 * 1024))); // could never fit
}

TEST(MemoryStore, EraseAndEraseByPrefixKeepTheCounts) {
  MemoryStore s(1 << 20, 4);
  s.put("http://a/x/1", response(""));
  s.put("http://a/x/2", response(""));
  s.put("http://a/y", response(""));
  EXPECT_EQ(s.erase_prefix("http://a/x/"), 2u);
  EXPECT_TRUE(s.erase("http://a/y"));
  EXPECT_FALSE(s.erase("http://a/y"));
  EXPECT_EQ(s.objects(), 0u);
  EXPECT_EQ(s.find("http://a/x/1"), nullptr);
}

TEST(MemoryStore, APassMarkKeepsWhatIsStored) {
  MemoryStore s(1 << 20, 4);
  s.put("k", response(""));
  s.pass("k", 12345);
  Variants* v = s.find("k");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->pass_until, 12345);
  EXPECT_EQ(v->list.size(), 1u);
  s.put("k", response("+b"));
  EXPECT_EQ(s.find("k")->pass_until, 0); // stored again: misses wait on fetches again
}

TEST(StoredBody, ALargeCompleteBodyMovesToAMemoryFileAndReadsTheSame) {
  StoredBody b;
  std::string data(StoredBody::kFileAtLeast + 123, 'a');
  data[7] = 'z';
  b.append(data.substr(0, 1000));
  b.append(data.substr(1000));
  EXPECT_EQ(b.fd(), -1);
  b.finish(true);
  EXPECT_GE(b.fd(), 0);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.size(), data.size());
  StoredBody small;
  small.append("abc");
  small.finish(true);
  EXPECT_EQ(small.fd(), -1);
  EXPECT_EQ(small.data(), "abc");
}

} // namespace
} // namespace portico::cache
