// FilterChain between a fake client Exchange and a fake terminal (the proxied exchange's place),
// with filters that record what they see and hold, take or answer on cue. What the chain
// promises (routing/filter.h): the request in filter order and the response in reverse; a
// held head holds everything behind it, in order, until the filter lets it go from a callback
// of its own; what it holds is bounded by the watermarks; a local reply passes only the filters
// before the one that made it; a failure after the response began is a reset.
#include "routing/filter_chain.h"

#include <ev.h>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace portico::routing {
namespace {

class FakeExchange final : public server::Exchange {
public:
  explicit FakeExchange(struct ev_loop* loop) {
    loop_ = loop;
    request_.method = "POST";
    request_.target = "/a";
    request_.version = http::Version::HTTP_1_1;
  }
  void send_head(const http::ResponseHead& head) override {
    head_sent_ = true;
    status = head.status;
    for (const auto& f : head.more)
      fields += std::string(f.name) + "=" + std::string(f.value) + ";";
  }
  void send_body(std::string_view data) override { body.append(data); }
  bool send_file(int fd, int64_t offset, int64_t length) override {
    if (!takes_files)
      return false;
    files.push_back(fd);
    body += "[file " + std::to_string(offset) + "+" + std::to_string(length) + "]";
    return true;
  }
  void end_response() override { response_ended_ = true; }
  size_t buffered() const override { return buffered_bytes; }
  void pause_request_body() override {}
  void resume_request_body() override {}
  void abort() override { aborted = true; }

  int status = 0;
  std::string fields, body;
  bool aborted = false;
  bool takes_files = true;
  std::vector<int> files;
  size_t buffered_bytes = 0;
};

struct FakeTerminal final : FilterChain::Terminal {
  void chain_request_head() override { events.push_back("head " + target()); }
  void chain_request_body(std::string_view data, bool end) override {
    events.push_back("body " + std::string(data) + (end ? " end" : ""));
  }
  void chain_request_trailers(std::span<const http::Header> t) override {
    events.push_back("trailers " + std::to_string(t.size()));
  }
  void chain_answered(int status, const char*) override {
    events.push_back("answered " + std::to_string(status));
  }
  void chain_hold_request(bool hold) override { held.push_back(hold); }
  void chain_response_drained() override { ++drained; }
  void chain_kept_over() override { events.push_back("kept over"); }
  std::string target() const { return std::string(ex->request().target); }

  FakeExchange* ex = nullptr;
  std::vector<std::string> events;
  std::vector<bool> held;
  int drained = 0;
};

// Records every step in a log shared by the test; its behaviour is set per test.
class Probe final : public Filter {
public:
  Probe(std::string name, std::vector<std::string>& log) : name_(std::move(name)), log_(log) {}

  FilterStatus on_request_head(http::RequestHead& req) override {
    log_.push_back(name_ + " request head");
    if (!rewrite.empty())
      req.target = rewrite;
    if (answer) {
      respond({answer, "text/plain", "local\n", {}});
      return FilterStatus::STOP;
    }
    return hold_request ? FilterStatus::STOP : FilterStatus::CONTINUE;
  }
  FilterStatus on_request_body(std::string_view& data, bool end) override {
    log_.push_back(name_ + " request body " + std::string(data));
    return FilterStatus::CONTINUE;
  }
  void on_local_reply(LocalReply& reply) override { log_.push_back(name_ + " local reply"); }
  FilterStatus on_response_head(FilterResponseHead& head) override {
    log_.push_back(name_ + " response head");
    head.fields->push_back({"x-by", name_});
    return hold_response ? FilterStatus::STOP : FilterStatus::CONTINUE;
  }
  FilterStatus on_response_body(std::string_view& data, bool end) override {
    log_.push_back(name_ + " response body " + std::string(data) + (end ? " end" : ""));
    if (take_response) {
      taken_.append(data);
      return FilterStatus::STOP;
    }
    return FilterStatus::CONTINUE;
  }
  size_t response_buffered() const override { return taken_.size(); }
  bool reads_response_body() const override { return reads_body; }
  bool keeps_response() const override { return keeps; }
  void on_response_writable() override { log_.push_back(name_ + " writable"); }
  void on_exchange_close() override { log_.push_back(name_ + " close"); }

  // A response of the filter's own making (a static file's).
  void stream_head() {
    std::vector<http::Header> fields;
    FilterResponseHead head{200, 6, &fields, ResponseSource::LOCAL, false};
    respond_head(head);
  }
  void stream(std::string_view data, bool end) { pass_response_body(data, end); }
  bool blocked() const { return response_blocked(); }
  bool file(int fd) { return send_response_file(fd, 10, 20); }

  // For the test, as the filter's own callback would.
  void let_request_go() { continue_request(); }
  void let_response_go() { continue_response(); }
  void pass_taken(bool end) {
    std::string out;
    out.swap(taken_);
    pass_response_body(out, end);
  }
  void fail_now(int status) { fail(status); }

  std::string rewrite;
  int answer = 0;
  bool hold_request = false, hold_response = false, take_response = false, reads_body = false;
  bool keeps = false;

private:
  std::string name_;
  std::vector<std::string>& log_;
  std::string taken_;
};

class ProbeFactory final : public FilterFactory {
public:
  ProbeFactory(std::string name, std::vector<std::string>& log, std::vector<Probe*>& made)
      : name_(std::move(name)), log_(log), made_(made) {}
  Filter* create(const server::Exchange&) const override {
    auto* p = new Probe(name_, log_);
    made_.push_back(p);
    return p;
  }

private:
  std::string name_;
  std::vector<std::string>& log_;
  std::vector<Probe*>& made_;
};

class NoFilter final : public FilterFactory {
  Filter* create(const server::Exchange&) const override { return nullptr; }
};

class FilterChainTest : public ::testing::Test {
protected:
  void SetUp() override {
    loop_ = ev_loop_new(EVFLAG_AUTO);
    ex_ = std::make_unique<FakeExchange>(loop_);
    terminal_.ex = ex_.get();
  }
  void TearDown() override {
    delete chain_;
    ev_loop_destroy(loop_);
  }
  void make(int n) {
    for (int i = 0; i < n; ++i)
      factories_.push_back(std::make_unique<ProbeFactory>("f" + std::to_string(i), log_, probes_));
    chain_ = FilterChain::make(factories_, *ex_, terminal_, options_);
    ASSERT_NE(chain_, nullptr);
  }
  // The upstream's response head, a 200 with no field, into the chain.
  void upstream_head() {
    std::vector<http::Header> fields;
    FilterResponseHead head{200, -1, &fields, ResponseSource::UPSTREAM, false};
    chain_->response_head(head);
  }
  void upstream_response(std::string_view body) {
    upstream_head();
    chain_->response_body(body, false);
    chain_->response_body({}, true);
  }
  // Runs the loop until a timer of the test's fires f, as a filter's own I/O would.
  template <typename F> void later(F f) {
    struct Call {
      ev_timer w;
      F f;
    } call{{}, f};
    ev_timer_init(
        &call.w, [](struct ev_loop*, ev_timer* w, int) { reinterpret_cast<Call*>(w)->f(); }, 0.001,
        0);
    ev_timer_start(loop_, &call.w);
    ev_run(loop_, EVRUN_ONCE);
  }

  struct ev_loop* loop_ = nullptr;
  std::unique_ptr<FakeExchange> ex_;
  FakeTerminal terminal_;
  ExchangeOptions options_;
  std::vector<std::unique_ptr<FilterFactory>> factories_;
  std::vector<std::string> log_;
  std::vector<Probe*> probes_;
  FilterChain* chain_ = nullptr;
};

TEST_F(FilterChainTest, NoFilterMadeMeansNoChain) {
  factories_.push_back(std::make_unique<NoFilter>());
  EXPECT_EQ(FilterChain::make(factories_, *ex_, terminal_, options_), nullptr);
}

TEST_F(FilterChainTest, TheRequestPassesInOrderAndTheResponseBackwards) {
  make(2);
  probes_[1]->rewrite = "/b";
  chain_->request_head();
  chain_->request_body("x", false);
  chain_->request_body({}, true);
  upstream_response("hi");
  EXPECT_EQ(terminal_.events, (std::vector<std::string>{"head /b", "body x", "body  end"}));
  EXPECT_EQ(log_, (std::vector<std::string>{
                      "f0 request head", "f1 request head", "f0 request body x",
                      "f1 request body x", "f0 request body ", "f1 request body ",
                      "f1 response head", "f0 response head", "f1 response body hi",
                      "f0 response body hi", "f1 response body  end", "f0 response body  end"}));
  EXPECT_EQ(ex_->fields, "x-by=f1;x-by=f0;");
  EXPECT_EQ(ex_->body, "hi");
  EXPECT_TRUE(ex_->response_ended());
}

TEST_F(FilterChainTest, AHeldHeadHoldsTheBodyBehindItUntilTheFilterLetsItGo) {
  make(3);
  probes_[1]->hold_request = true;
  chain_->request_head();
  chain_->request_body("one", false);
  chain_->request_body("two", false);
  chain_->request_body({}, true);
  EXPECT_TRUE(terminal_.events.empty());
  // Filters before the holder saw the body; the holder and those after it did not.
  EXPECT_EQ(log_,
            (std::vector<std::string>{"f0 request head", "f1 request head", "f0 request body one",
                                      "f0 request body two", "f0 request body "}));
  later([&] { probes_[1]->let_request_go(); });
  EXPECT_EQ(terminal_.events, (std::vector<std::string>{"head /a", "body onetwo", "body  end"}));
}

TEST_F(FilterChainTest, WhatAHeldHeadHoldsIsBoundedByTheWatermarks) {
  make(1);
  probes_[0]->hold_request = true;
  chain_->request_head();
  std::string chunk(64 * 1024, 'x');
  for (int i = 0; i < 5; ++i)
    chain_->request_body(chunk, false);
  EXPECT_EQ(terminal_.held, (std::vector<bool>{true})); // past 256 KiB: the client waits
  later([&] { probes_[0]->let_request_go(); });
  EXPECT_EQ(terminal_.held, (std::vector<bool>{true, false}));
}

TEST_F(FilterChainTest, ALocalReplyPassesOnlyTheFiltersBeforeItsMaker) {
  make(3);
  probes_[1]->answer = 403;
  chain_->request_head();
  chain_->request_body("late", true); // after the answer: goes nowhere
  EXPECT_EQ(terminal_.events, (std::vector<std::string>{"answered 403"}));
  EXPECT_EQ(log_, (std::vector<std::string>{"f0 request head", "f1 request head", "f1 local reply",
                                            "f0 local reply", "f0 response head",
                                            "f0 response body local\n end"}));
  EXPECT_EQ(ex_->status, 403);
  EXPECT_EQ(ex_->fields, "content-type=text/plain;x-by=f0;");
  EXPECT_EQ(ex_->body, "local\n");
}

TEST_F(FilterChainTest, AHeldResponseHeadKeepsItsBodyInOrder) {
  make(2);
  probes_[1]->hold_response = true;
  chain_->request_head();
  upstream_response("body");
  EXPECT_FALSE(ex_->head_sent());
  later([&] { probes_[1]->let_response_go(); });
  EXPECT_EQ(ex_->status, 200);
  EXPECT_EQ(ex_->body, "body");
  EXPECT_TRUE(ex_->response_ended());
  // The holder saw the body after it let the head go, then the filter before it.
  EXPECT_EQ(log_.back(), "f0 response body  end");
}

TEST_F(FilterChainTest, ATakingFilterCountsTowardsTheResponseWatermark) {
  make(1);
  probes_[0]->take_response = true;
  chain_->request_head();
  upstream_head();
  std::string chunk(64 * 1024, 'x');
  for (int i = 0; i < 5; ++i)
    chain_->response_body(chunk, false);
  EXPECT_TRUE(chain_->response_high()); // the upstream is not read meanwhile
  EXPECT_TRUE(ex_->body.empty());
  later([&] { probes_[0]->pass_taken(false); });
  EXPECT_FALSE(chain_->response_high());
  EXPECT_EQ(terminal_.drained, 1);
  EXPECT_EQ(ex_->body.size(), 5 * chunk.size());
}

TEST_F(FilterChainTest, AFailureAfterTheResponseBeganIsAReset) {
  make(1);
  chain_->request_head();
  std::vector<http::Header> fields;
  FilterResponseHead head{200, -1, &fields, ResponseSource::UPSTREAM, false};
  chain_->response_head(head);
  later([&] { probes_[0]->fail_now(504); });
  EXPECT_TRUE(ex_->aborted);
  EXPECT_EQ(terminal_.events.back(), "answered 0");
  EXPECT_EQ(ex_->status, 200); // no second head
}

TEST_F(FilterChainTest, AFailureBeforeTheResponseIsALocalReplyWithItsReason) {
  make(1);
  probes_[0]->hold_request = true;
  chain_->request_head();
  later([&] { probes_[0]->fail_now(504); });
  EXPECT_EQ(ex_->status, 504);
  EXPECT_EQ(ex_->body, "Gateway Timeout\n");
  EXPECT_EQ(terminal_.events, (std::vector<std::string>{"answered 504"}));
}

TEST_F(FilterChainTest, CloseTellsEachFilterOnceAndNothingRunsAfter) {
  make(2);
  chain_->request_head();
  chain_->close();
  chain_->close();
  upstream_response("ignored");
  EXPECT_EQ(std::count(log_.begin(), log_.end(), "f0 close"), 1);
  EXPECT_EQ(log_.back(), "f1 close");
  EXPECT_FALSE(ex_->head_sent());
}

TEST_F(FilterChainTest, AKeptResponseGoesOnThroughTheKeeperAndTheFiltersAboveIt) {
  make(3);
  probes_[1]->keeps = true;
  chain_->request_head();
  upstream_head();
  chain_->response_body("one", false);
  log_.clear();
  ASSERT_TRUE(chain_->keep_response()); // the client goes
  EXPECT_EQ(log_, (std::vector<std::string>{"f0 close"}));
  chain_->response_body("two", false);
  chain_->response_body({}, true);
  EXPECT_EQ(log_,
            (std::vector<std::string>{"f0 close", "f2 response body two", "f1 response body two",
                                      "f2 response body  end", "f1 response body  end"}));
  EXPECT_EQ(ex_->body, "one"); // nothing after the client went
  EXPECT_EQ(terminal_.events.back(), "kept over");
  chain_->close();
  EXPECT_EQ(std::count(log_.begin(), log_.end(), "f0 close"), 1);
  EXPECT_EQ(log_.back(), "f2 close");
}

TEST_F(FilterChainTest, AKeptResponseEndsWhenTheKeeperGivesItUpOrAFilterFailsIt) {
  make(2);
  probes_[0]->keeps = true;
  chain_->request_head();
  upstream_head();
  ASSERT_TRUE(chain_->keep_response());
  probes_[0]->keeps = false; // too large to keep after all
  chain_->response_body("more", false);
  EXPECT_EQ(terminal_.events.back(), "kept over");
  terminal_.events.clear();
  later([&] { probes_[1]->fail_now(504); }); // a deadline above it
  EXPECT_EQ(terminal_.events, (std::vector<std::string>{"kept over"}));
  EXPECT_FALSE(ex_->aborted); // the client is gone: nothing is said to it
}

TEST_F(FilterChainTest, NoFilterKeepingTheResponseLeavesTheCloseAsUsual) {
  make(2);
  chain_->request_head();
  EXPECT_FALSE(chain_->keep_response()); // no response yet
  upstream_head();
  EXPECT_FALSE(chain_->keep_response());                          // no filter keeps it
  EXPECT_EQ(std::count(log_.begin(), log_.end(), "f0 close"), 0); // nothing closed by it
  EXPECT_EQ(std::count(log_.begin(), log_.end(), "f1 close"), 0);
}

TEST_F(FilterChainTest, AFilterStreamsItsOwnBodyThroughTheFiltersBeforeIt) {
  make(3);
  chain_->request_head();
  probes_[1]->stream_head();
  probes_[1]->stream("abc", false);
  // The client's buffer above the high watermark: the producer waits for its cue.
  ex_->buffered_bytes = server::Exchange::kHighWatermark + 1;
  EXPECT_TRUE(probes_[1]->blocked());
  chain_->response_writable();
  ex_->buffered_bytes = 0;
  EXPECT_FALSE(probes_[1]->blocked());
  chain_->response_writable();
  probes_[1]->stream("def", true);
  EXPECT_EQ(ex_->status, 200);
  EXPECT_EQ(ex_->fields, "x-by=f0;");
  EXPECT_EQ(ex_->body, "abcdef");
  EXPECT_TRUE(ex_->response_ended());
  // Only the filters before it see it; the upstream part is told the request is answered (the
  // head had gone on: here the filter answers later, from a callback of its own).
  EXPECT_EQ(terminal_.events, (std::vector<std::string>{"head /a", "answered 200"}));
  EXPECT_EQ(log_, (std::vector<std::string>{"f0 request head", "f1 request head", "f2 request head",
                                            "f0 response head", "f0 response body abc",
                                            "f1 writable", "f0 response body def end"}));
}

TEST_F(FilterChainTest, WhatTheFiltersBeforeItHoldBlocksTheProducerToo) {
  make(2);
  probes_[0]->take_response = true;
  chain_->request_head();
  probes_[1]->stream_head();
  std::string big(server::Exchange::kHighWatermark + 1, 'x');
  probes_[1]->stream(big, false);
  EXPECT_TRUE(probes_[1]->blocked());
  probes_[0]->pass_taken(false); // f0 drains below the low watermark: f1 hears it
  EXPECT_FALSE(probes_[1]->blocked());
  EXPECT_EQ(log_.back(), "f1 writable");
}

TEST_F(FilterChainTest, AFileGoesToTheKernelOnlyWhenNoFilterReadsTheBody) {
  make(2);
  chain_->request_head();
  probes_[1]->stream_head();
  EXPECT_TRUE(probes_[1]->file(7));
  EXPECT_EQ(ex_->files, std::vector<int>{7});
  EXPECT_EQ(ex_->body, "[file 10+20]");
}

TEST_F(FilterChainTest, AFilterThatReadsTheBodyKeepsTheFileInTheProcess) {
  make(2);
  probes_[0]->reads_body = true; // compressing
  chain_->request_head();
  probes_[1]->stream_head();
  EXPECT_FALSE(probes_[1]->file(7));
  EXPECT_TRUE(ex_->files.empty());
}

TEST_F(FilterChainTest, AConnectionThatCannotSendFilesKeepsThemInTheProcess) {
  make(1);
  ex_->takes_files = false; // TLS, HTTP/2
  chain_->request_head();
  probes_[0]->stream_head();
  EXPECT_FALSE(probes_[0]->file(7));
}

TEST_F(FilterChainTest, StreamingAfterTheResponseBeganIsAReset) {
  make(2);
  chain_->request_head();
  upstream_head();
  probes_[1]->stream_head();
  EXPECT_TRUE(ex_->aborted);
}

} // namespace
} // namespace portico::routing
