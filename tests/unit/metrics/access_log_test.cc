// AccessLog: the text and JSON line of one entry (client bytes escaped so that a request is
// always one line), and when the buffer reaches the file: on flush(), once it passes 64 KiB,
// from its once-a-second timer, and on destruction; never per record.
#include "metrics/access_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <ev.h>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace portico::metrics {
namespace {

// The escaped forms: \" for the quote, \u0001 for the control byte, \\ for the backslash.
constexpr std::string_view kTarget = "/a\"b\x01"
                                     "c\\d?q=1";
constexpr std::string_view kTargetEscaped = R"(/a\"b\u0001c\\d?q=1)";

const http::Header kFields[] = {{"accept", "*/*"}, {"user-agent", "curl/8"}, {"x-tenant", "a b"}};

AccessLogEntry sample() {
  AccessLogEntry e;
  e.client = "192.0.2.7:5555";
  e.protocol = "h1";
  e.method = "GET";
  e.authority = "example.com";
  e.target = kTarget;
  e.status = 200;
  e.bytes_in = 12;
  e.bytes_out = 3456;
  e.queue = 0.0001;
  e.connect = 0.0025;
  e.first_byte = 0.01;
  e.total = 0.0123456789;
  e.upstream = "127.0.0.1:9001";
  e.retries = 1;
  e.upstream_target = "/b";
  e.route = "*/";
  e.fields = kFields;
  return e;
}

std::string utc(time_t t, const char* format) {
  tm g;
  gmtime_r(&t, &g);
  char buf[64];
  return std::string(buf, strftime(buf, sizeof buf, format, &g));
}

// A listener logging in the text format, json, or by a template.
config::ListenerConfig logging(std::string_view format = config::kTextLogFormat) {
  config::ListenerConfig l;
  if (format == "json") {
    l.access_log_format = config::AccessLogFormat::JSON;
  } else {
    auto line = config::parse_log_format(format);
    EXPECT_TRUE(line) << line.error();
    l.access_log_line = *line;
  }
  return l;
}

constexpr const char* kTextTime = "%d/%b/%Y:%H:%M:%S +0000";
constexpr const char* kJsonTime = "%Y-%m-%dT%H:%M:%SZ";

class AccessLogTest : public ::testing::Test {
protected:
  void SetUp() override {
    loop_ = ev_loop_new(EVFLAG_AUTO);
    ASSERT_NE(loop_, nullptr);
    ASSERT_EQ(::pipe2(fds_, O_CLOEXEC), 0);
    // Only the read end is non-blocking, so that "nothing written yet" reads as EAGAIN.
    ASSERT_EQ(::fcntl(fds_[0], F_SETFL, O_NONBLOCK), 0);
  }
  void TearDown() override {
    ::close(fds_[0]);
    ::close(fds_[1]);
    ev_loop_destroy(loop_);
  }
  // Everything in the pipe now; "" when it is empty.
  std::string drain() {
    std::string out;
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fds_[0], buf, sizeof buf);
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
        continue;
      }
      EXPECT_TRUE(n < 0 && errno == EAGAIN) << "read " << n << " errno " << errno;
      return out;
    }
  }
  // Records e and flushes; the line written, and the time bracketing the record (the line's
  // timestamp is one of the two seconds).
  std::string record_one(bool json, const AccessLogEntry& e, time_t& before, time_t& after) {
    AccessLog log(loop_, fds_[1], logging(json ? "json" : config::kTextLogFormat));
    before = time(nullptr);
    log.record(e);
    after = time(nullptr);
    EXPECT_EQ(drain(), ""); // buffered, not written per record
    log.flush();
    return drain();
  }
  // expected is the line with "@" where the timestamp goes.
  void expect_line(const std::string& got, const std::string& expected, const char* format,
                   time_t before, time_t after) {
    size_t at = expected.find('@');
    ASSERT_NE(at, std::string::npos);
    std::string a = expected, b = expected;
    a.replace(at, 1, utc(before, format));
    b.replace(at, 1, utc(after, format));
    if (got != b) {
      EXPECT_EQ(got, a);
    }
  }

  struct ev_loop* loop_ = nullptr;
  int fds_[2] = {-1, -1};
};

TEST_F(AccessLogTest, TextLine) {
  time_t before, after;
  std::string got = record_one(false, sample(), before, after);
  expect_line(got,
              "192.0.2.7:5555 - - [@] \"GET " + std::string(kTargetEscaped) +
                  " HTTP/1.1\" 200 3456 in=12 proto=h1 host=\"example.com\" queue=0.000100 "
                  "connect=0.002500 ttfb=0.010000 total=0.012346 upstream=127.0.0.1:9001 "
                  "retries=1\n",
              kTextTime, before, after);
}

TEST_F(AccessLogTest, TextLineUnansweredH2WithoutUpstream) {
  AccessLogEntry e = sample();
  e.protocol = "h2";
  e.method = "PO\"ST";
  e.authority = "ex\"ample\n.com";
  e.target = "/";
  e.status = 0;
  e.bytes_in = 0;
  e.bytes_out = 0;
  e.queue = e.connect = e.first_byte = 0;
  e.total = 1.5;
  e.upstream = "";
  e.retries = 0;
  time_t before, after;
  std::string got = record_one(false, e, before, after);
  expect_line(got,
              "192.0.2.7:5555 - - [@] \"PO\\\"ST / HTTP/2\" 0 0 in=0 proto=h2 "
              "host=\"ex\\\"ample\\u000a.com\" queue=0.000000 connect=0.000000 ttfb=0.000000 "
              "total=1.500000 upstream=- retries=0\n",
              kTextTime, before, after);
}

TEST_F(AccessLogTest, JsonLine) {
  time_t before, after;
  std::string got = record_one(true, sample(), before, after);
  expect_line(got,
              "{\"time\":\"@\",\"client\":\"192.0.2.7:5555\",\"protocol\":\"h1\",\"method\":"
              "\"GET\",\"authority\":\"example.com\",\"path\":\"" +
                  std::string(kTargetEscaped) +
                  "\",\"upstream_path\":\"/b\",\"route\":\"*/"
                  "\",\"status\":200,\"bytes_in\":12,\"bytes_out\":3456,\"queue\":0.000100,"
                  "\"connect\":0.002500,\"ttfb\":0.010000,\"total\":0.012346,\"upstream\":"
                  "\"127.0.0.1:9001\",\"retries\":1,\"user_agent\":\"curl/8\",\"referer\":\"\"}\n",
              kJsonTime, before, after);
}

TEST_F(AccessLogTest, CombinedAndATemplateOfFields) {
  time_t before = time(nullptr);
  {
    AccessLog log(loop_, fds_[1], logging(config::kCombinedLogFormat));
    log.record(sample());
  }
  time_t after = time(nullptr);
  expect_line(drain(),
              "192.0.2.7:5555 - - [@] \"GET " + std::string(kTargetEscaped) +
                  " HTTP/1.1\" 200 3456 \"-\" \"curl/8\"\n",
              kTextTime, before, after);
  {
    AccessLog log(loop_, fds_[1],
                  logging("$$ $route $path>$upstream_path tenant=${http_x_tenant} "
                          "$http_x_absent $ttfb$method"));
    log.record(sample());
  }
  EXPECT_EQ(drain(), "$ */ " + std::string(kTargetEscaped) + ">/b tenant=a b - 0.010000GET\n");
}

TEST_F(AccessLogTest, JsonEscapesEveryControlByteAndDel) {
  std::string target = "/";
  for (int c = 0; c < 0x20; ++c)
    target.push_back(static_cast<char>(c));
  target.push_back('\x7f');
  AccessLogEntry e = sample();
  e.target = target;
  e.upstream = "";
  time_t before, after;
  std::string got = record_one(true, e, before, after);
  std::string escaped = "/";
  for (int c = 0; c < 0x20; ++c) {
    char u[8];
    std::snprintf(u, sizeof u, "\\u%04x", c);
    escaped += u;
  }
  escaped += "\\u007f";
  EXPECT_NE(got.find("\"path\":\"" + escaped + "\","), std::string::npos) << got;
  EXPECT_NE(got.find(",\"upstream\":\"\","), std::string::npos) << got;
  // One line, and no raw control byte in it.
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back(), '\n');
  for (size_t i = 0; i + 1 < got.size(); ++i)
    EXPECT_GE(static_cast<unsigned char>(got[i]), 0x20) << i;
}

TEST_F(AccessLogTest, WrittenOnceTheBufferPasses64KiB) {
  // A file, not the pipe: 64 KiB is the pipe's capacity, and this test writes more.
  int fd = ::memfd_create("access_log_test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto size = [fd] {
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    return static_cast<size_t>(st.st_size);
  };
  size_t written = 0, line = 0;
  {
    AccessLog log(loop_, fd, logging());
    AccessLogEntry e = sample();
    size_t records = 0;
    while (size() == 0 && records < 10000) {
      log.record(e);
      ++records;
    }
    written = size();
    ASSERT_GT(written, 0u) << "nothing written after " << records << " records";
    // Whole lines, every record so far, in one go once 64 KiB was reached.
    std::string text(written, '\0');
    ASSERT_EQ(::pread(fd, text.data(), written, 0), static_cast<ssize_t>(written));
    EXPECT_EQ(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), records);
    EXPECT_EQ(text.back(), '\n');
    line = text.find('\n') + 1; // every line has the same length
    EXPECT_EQ(written, records * line);
    EXPECT_GE(written, 64u * 1024);
    EXPECT_LT(written, 64u * 1024 + line);
    // The next record is buffered again...
    log.record(e);
    EXPECT_EQ(size(), written);
  }
  // ...until the log goes away.
  EXPECT_EQ(size(), written + line);
  ::close(fd);
}

TEST_F(AccessLogTest, DestructionFlushes) {
  {
    AccessLog log(loop_, fds_[1], logging("json"));
    log.record(sample());
    log.record(sample());
    EXPECT_EQ(drain(), "");
  }
  std::string got = drain();
  EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), 2) << got;
}

struct Watch {
  bool readable = false;
  bool gave_up = false;
};

TEST_F(AccessLogTest, TimerFlushesWithinASecond) {
  AccessLog log(loop_, fds_[1], logging());
  log.record(sample());
  EXPECT_EQ(drain(), "");
  // Run the loop until the pipe becomes readable (or a guard far past the timer's second).
  Watch watch;
  ev_io io;
  ev_io_init(
      &io,
      [](struct ev_loop* l, ev_io* w, int) {
        static_cast<Watch*>(w->data)->readable = true;
        ev_break(l, EVBREAK_ALL);
      },
      fds_[0], EV_READ);
  io.data = &watch;
  ev_io_start(loop_, &io);
  ev_timer guard;
  ev_timer_init(
      &guard,
      [](struct ev_loop* l, ev_timer* w, int) {
        static_cast<Watch*>(w->data)->gave_up = true;
        ev_break(l, EVBREAK_ALL);
      },
      10.0, 0.0);
  guard.data = &watch;
  ev_timer_start(loop_, &guard);
  ev_tstamp started = ev_time();
  ev_run(loop_, 0);
  ev_tstamp waited = ev_time() - started;
  ev_io_stop(loop_, &io);
  ev_timer_stop(loop_, &guard);
  EXPECT_TRUE(watch.readable);
  EXPECT_FALSE(watch.gave_up);
  EXPECT_LT(waited, 2.0);
  std::string got = drain();
  EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), 1) << got;
  EXPECT_NE(got.find(" retries=1\n"), std::string::npos) << got;
}

TEST_F(AccessLogTest, DoesNotKeepTheLoopRunning) {
  {
    AccessLog log(loop_, fds_[1], logging());
    // Its timer is active but unreferenced: a loop with nothing else to do returns.
    EXPECT_EQ(ev_run(loop_, EVRUN_NOWAIT), 0);
  }
  // And destruction gives the reference back before stopping the timer.
  EXPECT_EQ(ev_run(loop_, EVRUN_NOWAIT), 0);
}

} // namespace
} // namespace portico::metrics
