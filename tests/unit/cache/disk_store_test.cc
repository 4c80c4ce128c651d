#include "cache/disk_store.h"
#include "cache/stored_file.h"
#include "metrics/worker_metrics.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <thread>

namespace portico::cache {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<StoredResponse> response(std::string vary_key, std::string body) {
  auto r = std::make_shared<StoredResponse>();
  r->status = 200;
  std::vector<http::Header> fields = {{"content-type", "text/plain"}, {"etag", "\"v1\""}};
  set_stored_fields(*r, fields);
  r->date = "Fri, 04 Dec 2026 10:00:00 GMT";
  r->fresh.lifetime = 600;
  r->fresh.response_time = 1'800'000'000;
  r->fresh.no_stale = true;
  r->auth_ok = true;
  r->vary_names = {"accept-encoding"};
  r->vary_key = std::move(vary_key);
  r->body = std::make_shared<StoredBody>();
  r->body->append(body);
  r->body->finish(true);
  r->length = static_cast<int64_t>(body.size());
  return r;
}

class DiskStoreTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("portico-disk-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static void read_back(const DiskStore& s) {
    while (s.loading()) // the store's thread reads what is there back
      std::this_thread::yield();
  }
  std::unique_ptr<DiskStore> open(size_t capacity = 1 << 20, size_t variants = 4) {
    auto s = std::make_unique<DiskStore>(dir_.string(), capacity, variants);
    read_back(*s);
    return s;
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_))
      if (e.is_regular_file())
        out.push_back(e.path());
    return out;
  }
  fs::path dir_;
};

TEST(StoredFile, AHeadReadsBackAsItWasWritten) {
  auto r = response("gzip", "");
  std::string bytes;
  encode_file_head("https://a/x", *r, 5, bytes);
  uint64_t head = 0, body = 0;
  ASSERT_TRUE(decode_file_prefix(bytes, head, body));
  EXPECT_EQ(body, 5u);
  EXPECT_EQ(head, bytes.size() - kFilePrefix);
  StoredResponse back;
  std::string key;
  std::vector<http::Header> fields;
  ASSERT_TRUE(decode_file_head(std::string_view(bytes).substr(kFilePrefix), key, back, fields));
  set_stored_fields(back, fields);
  EXPECT_EQ(key, "https://a/x");
  EXPECT_EQ(back.status, 200);
  ASSERT_EQ(back.fields.size(), 2u);
  EXPECT_EQ(back.fields[1].value, "\"v1\"");
  EXPECT_EQ(back.etag, "\"v1\"");
  EXPECT_EQ(back.date, r->date);
  EXPECT_EQ(back.fresh.lifetime, 600);
  EXPECT_EQ(back.fresh.response_time, 1'800'000'000);
  EXPECT_TRUE(back.fresh.no_stale);
  EXPECT_FALSE(back.fresh.no_cache);
  EXPECT_TRUE(back.auth_ok);
  EXPECT_EQ(back.vary_names, r->vary_names);
  EXPECT_EQ(back.vary_key, "gzip");
}

TEST(StoredFile, ACutHeadIsRefusedWhereverItIsCut) {
  auto r = response("gzip", "");
  std::string bytes;
  encode_file_head("https://a/x", *r, 0, bytes);
  std::string_view head = std::string_view(bytes).substr(kFilePrefix);
  for (size_t n = 0; n < head.size(); ++n) {
    StoredResponse back;
    std::string key;
    std::vector<http::Header> fields;
    EXPECT_FALSE(decode_file_head(head.substr(0, n), key, back, fields)) << n;
  }
  uint64_t h = 0, b = 0;
  EXPECT_FALSE(decode_file_prefix("PORTCF00" + bytes.substr(8), h, b)); // another version
}

TEST_F(DiskStoreTest, AResponseSavedIsLoadedWithItsBody) {
  auto s = open();
  s->save("https://a/x", *response("gzip", "hello"));
  auto got = s->load("https://a/x");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]->body->data(), "hello");
  EXPECT_TRUE(got[0]->body->complete);
  EXPECT_EQ(got[0]->length, 5);
  EXPECT_EQ(s->objects(), 1u);
  EXPECT_TRUE(s->load("https://a/y").empty());
}

TEST_F(DiskStoreTest, ALargeBodyIsSentFromTheFileAtItsOffset) {
  std::string body(100'000, 'b');
  body[0] = 'A';
  auto s = open();
  s->save("k", *response("", body));
  auto got = s->load("k");
  ASSERT_EQ(got.size(), 1u);
  ASSERT_GE(got[0]->body->fd(), 0);
  EXPECT_GT(got[0]->body->file_offset(), static_cast<int64_t>(kFilePrefix));
  char c = 0;
  ASSERT_EQ(::pread(got[0]->body->fd(), &c, 1, got[0]->body->file_offset()), 1);
  EXPECT_EQ(c, 'A');
  EXPECT_EQ(got[0]->body->data(), body);
}

TEST_F(DiskStoreTest, AfterARestartTheIndexIsReadBackFromTheFiles) {
  {
    auto s = open();
    s->save("k1", *response("gzip", "one-gzip"));
    s->save("k1", *response("br", "one-br"));
    s->save("k2", *response("", "two"));
  }
  auto s = open();
  EXPECT_EQ(s->objects(), 3u);
  auto k1 = s->load("k1");
  ASSERT_EQ(k1.size(), 2u);
  EXPECT_EQ(k1[0]->body->data().substr(0, 4), "one-");
  ASSERT_EQ(s->load("k2").size(), 1u);
  EXPECT_EQ(s->load("k2")[0]->body->data(), "two");
}

TEST_F(DiskStoreTest, AHalfWrittenFileIsNeverServedAndGoes) {
  {
    auto s = open();
    s->save("k", *response("", "whole"));
  }
  auto written = files();
  ASSERT_EQ(written.size(), 1u);
  // A crash mid-write leaves a temporary; a disk that lost the tail leaves a short file.
  std::ofstream(dir_ / "tmp.12345.0") << "PORTCF01 partial";
  fs::resize_file(written[0], fs::file_size(written[0]) - 1);
  auto s = open();
  EXPECT_EQ(s->objects(), 0u);
  EXPECT_TRUE(s->load("k").empty());
  EXPECT_TRUE(files().empty());
}

TEST_F(DiskStoreTest, AFileDamagedAfterItWasReadBackIsForgottenWhenAsked) {
  auto s = open();
  s->save("k", *response("", "whole"));
  auto written = files();
  ASSERT_EQ(written.size(), 1u);
  fs::resize_file(written[0], 10);
  EXPECT_TRUE(s->load("k").empty());
  EXPECT_EQ(s->objects(), 0u);
}

TEST_F(DiskStoreTest, AFileDeletedFromOutsideIsForgottenWhenAsked) {
  auto s = open();
  s->save("k", *response("", "whole"));
  auto written = files();
  ASSERT_EQ(written.size(), 1u);
  fs::remove(written[0]);
  EXPECT_TRUE(s->load("k").empty());
  EXPECT_EQ(s->objects(), 0u); // not counted any more
  EXPECT_EQ(s->used_bytes(), 0u);
}

TEST_F(DiskStoreTest, TheBoundInBlocksHoldsAndEvictionDeletesFiles) {
  auto s = open(64 * 4096);
  for (int i = 0; i < 500; ++i)
    s->save("k" + std::to_string(i), *response("", std::string(3000, 'x')));
  EXPECT_LE(s->used_bytes(), 64u * 4096);
  EXPECT_EQ(files().size(), s->objects());
  EXPECT_GE(s->objects(), 50u);
  auto newest = s->load("k499");
  EXPECT_EQ(newest.size(), 1u);
}

TEST_F(DiskStoreTest, VariantsPerKeyAreBoundedTheirFilesDeleted) {
  auto s = open(1 << 20, 2);
  for (const char* v : {"a", "b", "c", "d"})
    s->save("k", *response(v, v));
  EXPECT_EQ(s->objects(), 2u);
  EXPECT_EQ(files().size(), 2u);
  auto got = s->load("k");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]->vary_key, "d");
}

TEST_F(DiskStoreTest, ErasedKeysLoseTheirFilesAndStayErasedAfterARestart) {
  {
    auto s = open();
    s->save("https://a/x", *response("", "x"));
    s->save("https://a/x/1", *response("", "x1"));
    s->save("https://a/y", *response("", "y"));
    EXPECT_TRUE(s->erase("https://a/y"));
    EXPECT_EQ(s->erase_prefix("https://a/x"), 2u);
  }
  EXPECT_TRUE(files().empty());
  auto s = open();
  EXPECT_EQ(s->objects(), 0u);
}

TEST_F(DiskStoreTest, AKeyErasedWhileTheIndexIsReadBackDoesNotComeBack) {
  {
    auto s = open(1 << 24);
    for (int i = 0; i < 600; ++i) // more than one batch
      s->save("k" + std::to_string(i), *response("", "x"));
  }
  // Whether the store's thread has read these back yet or not, they are gone, and the new k8
  // is the one kept.
  DiskStore s(dir_.string(), 1 << 24, 4);
  s.erase("k7");
  s.erase_prefix("k59"); // k59, k590..k599
  s.save("k8", *response("", "new"));
  read_back(s);
  EXPECT_TRUE(s.load("k7").empty());
  EXPECT_TRUE(s.load("k595").empty());
  EXPECT_EQ(s.objects(), 600u - 12u);
  auto k8 = s.load("k8");
  ASSERT_EQ(k8.size(), 1u);
  EXPECT_EQ(k8[0]->body->data(), "new");
}

TEST_F(DiskStoreTest, GaugesFollowTheStoreAndLeaveWithIt) {
  auto& levels = metrics::disk_cache_levels();
  int64_t objects = levels.objects.load(), bytes = levels.bytes.load();
  {
    auto s = open();
    s->save("k", *response("", "x"));
    EXPECT_EQ(levels.objects.load(), objects + 1);
    EXPECT_EQ(levels.bytes.load(), bytes + 4096);
  }
  EXPECT_EQ(levels.objects.load(), objects);
  EXPECT_EQ(levels.bytes.load(), bytes);
}

TEST_F(DiskStoreTest, OneDirectoryIsOneStoreForEveryone) {
  auto a = DiskStore::open(dir_.string(), 1 << 20, 4);
  auto b = DiskStore::open(dir_.string(), 1 << 20, 4);
  EXPECT_EQ(a, b);
  read_back(*a);
  a->save("k", *response("", "x"));
  EXPECT_EQ(b->load("k").size(), 1u);
}

} // namespace
} // namespace portico::cache
