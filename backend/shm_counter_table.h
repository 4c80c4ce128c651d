#pragma once
// A fixed-size hash table of counters in a shared anonymous mapping, made by the master before
// it forks, so counts survive worker crashes and restarts. Lock-free: a slot is claimed with a
// compare-and-swap, counts are atomic adds.
#include "counter_store.h"

#include <atomic>
#include <cstddef>

namespace portico::backend {

class ShmCounterTable final : public CounterStore {
public:
  static constexpr size_t kMaxKey = 48;

  // Maps the table; call in the master, before fork.
  explicit ShmCounterTable(size_t slots = 1 << 16);
  ~ShmCounterTable() override;
  ShmCounterTable(const ShmCounterTable&) = delete;
  ShmCounterTable& operator=(const ShmCounterTable&) = delete;

  bool ok() const { return slots_ != nullptr; }
  core::expected<uint64_t, std::string> increment(std::string_view key);
  // CounterStore: answers before it returns.
  void increment(std::string_view key, CounterWaiter* waiter) override {
    waiter->on_counter(increment(key));
  }
  // The current value, 0 when absent (for tests and status pages).
  uint64_t get(std::string_view key) const;

private:
  struct Slot {
    std::atomic<uint32_t> state; // 0 free, 1 being claimed, 2 ready
    uint32_t key_len;
    char key[kMaxKey];
    std::atomic<uint64_t> value;
  };
  Slot* find(std::string_view key, bool create) const;

  Slot* slots_ = nullptr;
  size_t count_ = 0;
};

} // namespace portico::backend
