#pragma once
// Spreads connections over portico-backend's workers, which share each listening socket: a
// table of the workers' open connection counts in an anonymous MAP_SHARED mapping the master
// makes before it forks, read by each worker's acceptors before they accept
// (server/accept_share.h). The master gives each worker it forks a place, and frees it when it
// reaps the worker, so that one killed in mid-flight leaves no place the others would wait on.
// Every field is a hint written with relaxed stores: a stale count costs a connection the
// wrong worker, never a lost one.
#include "server/accept_share.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace portico::backend {

class AcceptBalance {
public:
  // Master, before fork: room for this many workers alive at once.
  explicit AcceptBalance(size_t capacity);
  ~AcceptBalance();
  AcceptBalance(const AcceptBalance&) = delete;
  AcceptBalance& operator=(const AcceptBalance&) = delete;

  bool ok() const { return places_ != nullptr; }
  // Master, before fork: a place for the worker about to be forked, counted as accepting from
  // now; -1 when every place is taken (that worker accepts without asking anyone).
  int reserve();
  // Master: the place's worker has been reaped, or was never forked.
  void release(int place);
  // Worker: its place, as the share its acceptors ask.
  std::unique_ptr<server::AcceptShare> member(int place);

private:
  class Member;
  struct alignas(64) Place {
    std::atomic<bool> in_use{false}; // written by the master alone
    std::atomic<bool> accepting{false};
    std::atomic<uint32_t> held{0};
    std::atomic<uint64_t> accepted{0}; // never reset: whether it took one while others waited
    std::atomic<int64_t> passed_over_until{0}; // steady clock, ns: it kept a connection waiting
  };
  // A line of its own: the places after it start on a line boundary, as alignas asks.
  struct alignas(64) Header {
    std::atomic<uint32_t> used{0}; // places [0, used) may be in use: what a scan reads
  };

  size_t bytes() const { return sizeof(Header) + capacity_ * sizeof(Place); }

  void* map_ = nullptr;
  Header* header_ = nullptr;
  Place* places_ = nullptr;
  size_t capacity_ = 0;
};

} // namespace portico::backend
