#pragma once
// Drives one exchange's filters (filter.h): the request side from the client to a Terminal (the
// proxied exchange's way upstream), the response side from the upstream, or a local reply, to
// the client Exchange. A request for which no filter was made has no chain at all (make()
// returns null): the exchange calls its two ends directly, so it pays a test per event.
//
// Each side holds at most one head at a time (the filter that stopped it); what arrives after
// it waits here, in arrival order, and is bounded by the exchange's watermarks: above the high
// one (with what filters report holding) the producer is paused, below the low one resumed.
#include "core/byte_queue.h"
#include "routing/filter.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace portico::routing {

class FilterChain : public core::SmallAllocated<FilterChain> {
public:
  // The far end of the request side, and what the chain asks of the exchange that owns it.
  class Terminal {
  public:
    // The request passed every filter: on to the upstream.
    virtual void chain_request_head() = 0;
    virtual void chain_request_body(std::string_view data, bool end) = 0;
    virtual void chain_request_trailers(std::span<const http::Header> trailers) = 0;
    // A filter answered or failed the request (status: what it answered, 0 for a reset; why:
    // the failure, null for an answer): no more upstream work, and nothing more goes up.
    virtual void chain_answered(int status, const char* why) = 0;
    // Hold the client back (the chain holds a high watermark of its body), or let it go.
    virtual void chain_hold_request(bool hold) = 0;
    // What the response side held fell below the low watermark: the upstream may read again.
    virtual void chain_response_drained() = 0;
    // The rest of a response kept after the client went (keep_response) is over: it ended,
    // a filter failed it, or the one keeping it gave it up. The upstream part ends, and close()
    // is due.
    virtual void chain_kept_over() = 0;

  protected:
    ~Terminal() = default;
  };

  // Asks each factory for this request's filter; null when none made one.
  static FilterChain* make(std::span<const std::unique_ptr<FilterFactory>> factories,
                           server::Exchange& ex, Terminal& terminal, ExchangeOptions& options);
  ~FilterChain();
  FilterChain(const FilterChain&) = delete;
  FilterChain& operator=(const FilterChain&) = delete;
  // The exchange closed: each filter hears it once; none is called again. Deleted with the chain.
  void close();
  // The client exchange is closing while the upstream's response comes: true when a filter
  // keeps the rest (Filter::keeps_response). The filters below it are closed now; it and
  // those above it see the rest of the response, which goes no further, until the terminal
  // hears chain_kept_over and closes the chain. False: nothing done, close() as usual.
  bool keep_response();

  // The request side, from the client.
  void request_head();
  void request_body(std::string_view data, bool end);
  void request_trailers(std::span<const http::Header> trailers);
  // The response side, from the upstream.
  void response_head(FilterResponseHead& head);
  void response_body(std::string_view data, bool end);
  void response_trailers(std::span<const http::Header> trailers);
  // An answer of the terminal's own (a 502, a 503): through every filter's response side.
  void local_reply(const LocalReply& reply) { reply_from(count_, reply, count_); }
  // Response bytes held here or by filters went above the high watermark and not yet below
  // the low one: the upstream should not be read (chain_response_drained says when again).
  bool response_high() const { return response_high_; }

  // Filter's protected helpers, for the filter at index i.
  server::Exchange& exchange() const { return *ex_; }
  ExchangeOptions& exchange_options() const { return *options_; }
  void continue_request(size_t i);
  void continue_response(size_t i);
  void pass_request_body(size_t i, std::string_view data, bool end) {
    run_request_body(i + 1, data, end);
    check_request_level();
  }
  void pass_request_trailers(size_t i, std::span<const http::Header> trailers) {
    run_request_trailers(i + 1, trailers);
  }
  void pass_response_body(size_t i, std::string_view data, bool end) {
    run_response_body(i, data, end);
    check_response_level();
  }
  void pass_response_trailers(size_t i, std::span<const http::Header> trailers) {
    run_response_trailers(i, trailers);
  }
  // why: a failure's reason (fail()'s reply), null for an answer.
  void respond(size_t i, const LocalReply& reply, const char* why = nullptr);
  void respond_head(size_t i, FilterResponseHead& head);
  bool response_blocked() const {
    return response_high_ || (!kept_ && ex_->above_high_watermark());
  }
  void replace_response(size_t i);
  bool send_response_file(size_t i, int fd, int64_t offset, int64_t length);
  // The client took bytes (the exchange's on_response_writable): a filter making the response
  // may go on.
  void response_writable();
  void fail(size_t i, int status, const char* why);

private:
  // What waits behind a held head: body bytes (seen by the filters before the holder), and
  // whether the end came, with trailers (copied into the exchange's arena).
  struct Queue {
    core::ByteQueue bytes;
    bool end = false;
    bool has_trailers = false;
    std::vector<http::Header> trailers;
    // Moved out before a replay: a filter further on may hold the head again and queue
    // behind it.
    void take(Queue& from) {
      bytes.move_from(from.bytes, from.bytes.size());
      std::swap(end, from.end);
      std::swap(has_trailers, from.has_trailers);
      trailers.swap(from.trailers);
    }
  };

  // Request side: filters from..count_-1 in order, up to a held head.
  void run_request_head(size_t from);
  void run_request_body(size_t from, std::string_view data, bool end);
  void run_request_trailers(size_t from, std::span<const http::Header> trailers);
  // Response side: filters below `below`, from the highest down, up to a held head.
  void run_response_head(size_t below, FilterResponseHead& head);
  void run_response_body(size_t below, std::string_view data, bool end);
  void run_response_trailers(size_t below, std::span<const http::Header> trailers);
  // Filter i answers with status (why: a failure's reason): false when it cannot any more (the
  // exchange closed, or the response had begun: then a reset). The upstream part is told.
  bool start_answer(size_t i, int status, const char* why);
  // A reply goes through the response side of the filters below `below`; those below
  // `shapers` reshape it first (the answering filter too: its own answer may need its mapping).
  void reply_from(size_t below, LocalReply reply, size_t shapers);
  // The held bytes of a side, replayed from filter `from` once its head is let go.
  void replay_request(size_t from);
  void replay_response(size_t below);
  void send_head_to_client(FilterResponseHead& head);
  void send_body_to_client(std::string_view data, bool end);
  void hold_response_head(size_t at, const FilterResponseHead& head);
  void queue_body(Queue& q, std::string_view data, bool end);
  void queue_trailers(Queue& q, std::span<const http::Header> trailers);
  // Pauses or resumes the producer of a side against the watermarks.
  void check_request_level();
  void check_response_level();
  size_t request_held() const;
  size_t response_held() const;
  bool done() const { return closed_ || answered_; }

  FilterChain() = default;

  static constexpr size_t kMaxFilters = 16;
  Filter* filters_[kMaxFilters];
  uint8_t count_ = 0;
  server::Exchange* ex_ = nullptr;
  Terminal* terminal_ = nullptr;
  ExchangeOptions* options_ = nullptr;
  bool closed_ = false;
  bool answered_ = false; // a local reply or failure: the request side goes no further
  // The client went and filters from kept_from_ up keep the response (keep_response): the
  // response side ends at kept_from_, and ex_ is null.
  bool kept_ = false;
  uint8_t kept_from_ = 0;

  // The request side: where its head waits (count_: passed every filter).
  uint8_t request_at_ = 0;
  bool request_held_ = false;
  bool request_paused_ = false;
  Queue request_queue_;
  // The response side: the filters below response_top_ see it (count_ for the upstream's,
  // the answering filter's index for a local reply); where its head waits.
  uint8_t response_top_ = 0;
  uint8_t response_at_ = 0;
  bool response_begun_ = false; // a head entered the response side
  bool response_held_ = false;
  bool response_high_ = false; // response_held() went above the high watermark
  bool producing_ = false;     // filters_[response_top_] makes the body (respond_head)
  bool kick_ = false;          // ... and starts once the head has passed (replace_response)
  static constexpr uint8_t kNone = 0xff;
  uint8_t drop_at_ = kNone; // the filter that replaced the response: what comes down stops here
  FilterResponseHead held_head_;
  std::vector<http::Header> held_fields_;
  Queue response_queue_;
};

} // namespace portico::routing
