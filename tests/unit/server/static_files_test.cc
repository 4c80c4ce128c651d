// StaticFiles through a fake sink: what it answers, and that its cache keeps to its bounds
// (entries, bytes, descriptors) and finds a file changed on disk.
#include "server/static_files.h"

#include <cstdio>
#include <ev.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <unistd.h>

namespace portico::server {
namespace {

class FakeSink final : public FileSink {
public:
  explicit FakeSink(struct ev_loop* loop, std::string_view target,
                    std::vector<http::Header> fields = {})
      : loop_(loop), fields_(std::move(fields)) {
    req_.method = "GET";
    req_.target = target;
    req_.version = http::Version::HTTP_1_1;
    req_.headers = fields_;
  }
  const http::RequestHead& request() const override { return req_; }
  http::Arena& arena() override { return arena_; }
  struct ev_loop* loop() const override {
    return loop_;
  }
  void send_head(const http::ResponseHead& head) override {
    status = head.status;
    head.for_each([&](const http::Header& h) {
      this->head += std::string(h.name) + ": " + std::string(h.value) + "\n";
    });
  }
  void send_body(std::string_view data) override { body += data; }
  void end_response() override { ended = true; }
  void send_file(int fd, int64_t offset, int64_t length) override {
    std::string buf(static_cast<size_t>(length), '\0');
    EXPECT_EQ(::pread(fd, buf.data(), buf.size(), offset), length);
    ::close(fd);
    body += buf;
    ended = true;
    ++files;
  }

  int status = 0;
  std::string head, body;
  bool ended = false;
  int files = 0;

private:
  struct ev_loop* loop_;
  http::RequestHead req_;
  http::InlineArena<> arena_;
  std::vector<http::Header> fields_;
};

// What a sink saw, kept after it is gone.
struct Reply {
  int status = 0;
  std::string head, body;
  int files = 0;
};

class StaticFilesTest : public ::testing::Test {
protected:
  void SetUp() override {
    loop_ = ev_loop_new(EVFLAG_AUTO);
    char dir[] = "/tmp/portico-static-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
  }
  void TearDown() override {
    std::filesystem::remove_all(root_);
    ev_loop_destroy(loop_);
  }
  void write(const std::string& name, const std::string& data) {
    std::filesystem::create_directories(std::filesystem::path(root_ + "/" + name).parent_path());
    std::ofstream(root_ + "/" + name, std::ios::binary) << data;
  }
  StaticOptions options() {
    StaticOptions o;
    o.root = root_;
    return o;
  }
  Reply get(StaticFiles& files, std::string_view path, std::vector<http::Header> fields = {}) {
    FakeSink sink(loop_, path, std::move(fields));
    files.serve(sink, path);
    EXPECT_TRUE(sink.ended) << path;
    return {sink.status, sink.head, sink.body, sink.files};
  }

  struct ev_loop* loop_ = nullptr;
  std::string root_;
};

TEST_F(StaticFilesTest, ServesAFileAndRefusesWhatItMustNot) {
  write("a.txt", "hello\n");
  write(".env", "secret");
  write("d/index.html", "<p>d</p>");
  StaticFiles files(options());
  ASSERT_TRUE(files.ok());
  auto r = get(files, "/a.txt");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello\n");
  EXPECT_EQ(get(files, "/.env").status, 404);
  EXPECT_EQ(get(files, "/%2e%2e/x").status, 403);
  EXPECT_EQ(get(files, "/a%5c.txt").status, 400);
  EXPECT_EQ(get(files, "/d").status, 301);
  EXPECT_EQ(get(files, "/d/").body, "<p>d</p>");
  EXPECT_EQ(get(files, "/nothing").status, 404);
}

TEST_F(StaticFilesTest, TryFilesFallsBack) {
  write("index.html", "app");
  write("x.js", "js");
  auto o = options();
  o.try_files = {"$uri", "$uri/", "/index.html"};
  StaticFiles files(o);
  EXPECT_EQ(get(files, "/x.js").body, "js");
  EXPECT_EQ(get(files, "/deep/link").body, "app");
  o.try_files = {"$uri", "=410"};
  StaticFiles gone(o);
  EXPECT_EQ(get(gone, "/deep/link").status, 410);
  o.try_files = {"$uri", "@upstream"};
  StaticFiles pass(o);
  FakeSink sink(loop_, "/deep/link");
  EXPECT_EQ(pass.serve(sink, "/deep/link"), StaticFiles::kPassOn);
  EXPECT_EQ(sink.status, 0); // nothing sent: the upstream answers
}

TEST_F(StaticFilesTest, TheCacheKeepsToItsEntriesAndBytes) {
  for (int i = 0; i < 20; ++i)
    write("f" + std::to_string(i), std::string(1000, 'a'));
  auto o = options();
  o.cache_entries = 5;
  StaticFiles files(o);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(get(files, "/f" + std::to_string(i)).body.size(), 1000u);
  EXPECT_EQ(files.cached_entries(), 5u);
  o.cache_entries = 100;
  o.cache_bytes = 3 * (1000 + 300);
  StaticFiles small(o);
  for (int i = 0; i < 20; ++i)
    get(small, "/f" + std::to_string(i));
  EXPECT_LE(small.cached_entries(), 3u);
  EXPECT_GE(small.cached_entries(), 2u);
}

TEST_F(StaticFilesTest, AFileTooBigForTheBudgetLeavesTheCacheAlone) {
  write("small", "s");
  write("bigger", std::string(1800, 'b'));
  auto o = options();
  o.cache_bytes = 2000; // the small file's entry fits, the bigger one's never can
  StaticFiles files(o);
  get(files, "/small");
  EXPECT_EQ(files.cached_entries(), 1u);
  EXPECT_EQ(get(files, "/bigger").body.size(), 1800u);
  EXPECT_EQ(files.cached_entries(), 1u); // still the small one
}

TEST_F(StaticFilesTest, LargeFilesAreKeptOpenUpToTheLimit) {
  for (int i = 0; i < 6; ++i)
    write("big" + std::to_string(i), std::string(5000, 'b'));
  auto o = options();
  o.max_cached_file = 1000;
  o.max_open_files = 2;
  StaticFiles files(o);
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 6; ++i) {
      auto r = get(files, "/big" + std::to_string(i));
      EXPECT_EQ(r.body, std::string(5000, 'b'));
      EXPECT_EQ(r.files, 1);
    }
  EXPECT_EQ(files.open_files(), 2u);
}

TEST_F(StaticFilesTest, AChangedFileIsSeenAtTheNextCheck) {
  write("c.txt", "one");
  auto o = options();
  o.revalidate_after = 0; // every request checks
  StaticFiles files(o);
  EXPECT_EQ(get(files, "/c.txt").body, "one");
  write("c.txt", "two!");
  EXPECT_EQ(get(files, "/c.txt").body, "two!");
  std::filesystem::remove(root_ + "/c.txt");
  EXPECT_EQ(get(files, "/c.txt").status, 404);
  EXPECT_EQ(files.cached_entries(), 0u);
}

TEST_F(StaticFilesTest, APrecompressedSiblingWhenAcceptedAndFresh) {
  write("app.js", "plain");
  write("app.js.br", "BROTLI");
  auto o = options();
  o.precompressed = {compression::Encoding::BROTLI, compression::Encoding::GZIP};
  StaticFiles files(o);
  auto r = get(files, "/app.js", {{"accept-encoding", "gzip, br"}});
  EXPECT_EQ(r.body, "BROTLI");
  EXPECT_NE(r.head.find("content-encoding: br\n"), std::string::npos);
  EXPECT_NE(r.head.find("vary: accept-encoding\n"), std::string::npos);
  EXPECT_NE(r.head.find("content-type: text/javascript"), std::string::npos);
  r = get(files, "/app.js", {{"accept-encoding", "gzip"}});
  EXPECT_EQ(r.body, "plain");
  EXPECT_NE(r.head.find("vary: accept-encoding\n"), std::string::npos);
}

} // namespace
} // namespace portico::server
