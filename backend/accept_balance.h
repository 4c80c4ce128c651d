#pragma once
// Spreads connections over portico-backend's workers, which share each listening socket: a
// table of the workers' open connection counts in an anonymous MAP_SHARED mapping the master
// makes before it forks, read by each worker's acceptors before they accept
// (server/accept_share.h). A worker claims a free place by its pid when it starts; the master
// frees the place when it reaps the worker, so that one killed in mid-flight leaves no place
// the others would wait on. Every field is a hint written with relaxed stores: a stale count
// costs a connection the wrong worker, never a lost one.
#include "server/accept_share.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sys/types.h>

namespace portico::backend {

class AcceptBalance {
public:
  // Master, before fork: room for this many workers alive at once.
  explicit AcceptBalance(size_t capacity);
  ~AcceptBalance();
  AcceptBalance(const AcceptBalance&) = delete;
  AcceptBalance& operator=(const AcceptBalance&) = delete;

  bool ok() const { return places_ != nullptr; }
  // Master: pid's worker has been reaped; its place is free.
  void forget(pid_t pid);
  // Worker: a place for pid, or null when every place is taken (the worker then accepts
  // without asking anyone).
  std::unique_ptr<server::AcceptShare> join(pid_t pid);

private:
  class Member;
  struct alignas(64) Place {
    std::atomic<pid_t> owner{0}; // 0: free
    std::atomic<bool> accepting{false};
    std::atomic<uint32_t> held{0};
    std::atomic<uint64_t> accepted{0}; // never reset: whether anyone took a connection
  };
  struct Header {
    std::atomic<uint32_t> used{0}; // places [0, used) may have an owner: what a scan reads
  };

  size_t bytes() const { return sizeof(Header) + capacity_ * sizeof(Place); }

  void* map_ = nullptr;
  Header* header_ = nullptr;
  Place* places_ = nullptr;
  size_t capacity_ = 0;
};

} // namespace portico::backend
