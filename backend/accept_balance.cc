#include "accept_balance.h"

#include <chrono>
#include <new>
#include <sys/mman.h>

namespace portico::backend {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;
// How long a worker that kept a connection waiting is skipped.
constexpr int64_t kPassOverNs = 1'000'000'000;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

class AcceptBalance::Member : public server::AcceptShare {
public:
  Member(const AcceptBalance& table, Place& mine) : table_(table), mine_(mine) {}

  void accepted(size_t held) override {
    mine_.held.store(static_cast<uint32_t>(held), kRelaxed);
    mine_.passed_over_until.store(0, kRelaxed); // it runs: the others may wait for it again
    mine_.accepted.store(mine_.accepted.load(kRelaxed) + 1, kRelaxed); // one writer
  }
  void closed(size_t held) override { mine_.held.store(static_cast<uint32_t>(held), kRelaxed); }
  void stop_accepting() override { mine_.accepting.store(false, kRelaxed); }

  int fewer_than(size_t mine) const override {
    int best = -1;
    uint32_t fewest = 0;
    int64_t now = 0; // read once, if any place is passed over
    uint32_t used = table_.header_->used.load(kRelaxed);
    for (uint32_t i = 0; i < used; ++i) {
      const Place& p = table_.places_[i];
      if (&p == &mine_ || !p.in_use.load(kRelaxed) || !p.accepting.load(kRelaxed))
        continue;
      uint32_t held = p.held.load(kRelaxed);
      if (held >= mine || (best >= 0 && held >= fewest))
        continue;
      if (int64_t until = p.passed_over_until.load(kRelaxed)) {
        if (!now)
          now = steady_ns();
        if (now < until)
          continue;
      }
      best = static_cast<int>(i);
      fewest = held;
    }
    return best;
  }

  uint64_t accepted_by(int other) const override {
    return table_.places_[other].accepted.load(kRelaxed);
  }

  void pass_over(int other) override {
    table_.places_[other].passed_over_until.store(steady_ns() + kPassOverNs, kRelaxed);
  }

private:
  const AcceptBalance& table_;
  Place& mine_;
};

AcceptBalance::AcceptBalance(size_t capacity) : capacity_(capacity) {
  void* p = ::mmap(nullptr, bytes(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return;
  map_ = p;
  header_ = new (p) Header;
  places_ = reinterpret_cast<Place*>(static_cast<char*>(p) + sizeof(Header));
  for (size_t i = 0; i < capacity_; ++i)
    new (&places_[i]) Place;
}

AcceptBalance::~AcceptBalance() {
  if (map_)
    ::munmap(map_, bytes());
}

int AcceptBalance::reserve() {
  if (!ok())
    return -1;
  for (size_t i = 0; i < capacity_; ++i) {
    Place& p = places_[i];
    if (p.in_use.load(kRelaxed))
      continue;
    p.held.store(0, kRelaxed);
    p.passed_over_until.store(0, kRelaxed);
    // Counted from now: the worker is about to accept, and the others leave it its share
    // rather than take every connection of a burst that comes while it starts.
    p.accepting.store(true, kRelaxed);
    p.in_use.store(true, std::memory_order_release);
    if (header_->used.load(kRelaxed) < i + 1)
      header_->used.store(static_cast<uint32_t>(i + 1), kRelaxed); // the master alone writes it
    return static_cast<int>(i);
  }
  return -1;
}

void AcceptBalance::release(int place) {
  if (!ok() || place < 0 || static_cast<size_t>(place) >= capacity_)
    return;
  Place& p = places_[place];
  p.accepting.store(false, kRelaxed);
  p.held.store(0, kRelaxed);
  p.in_use.store(false, std::memory_order_release);
}

std::unique_ptr<server::AcceptShare> AcceptBalance::member(int place) {
  if (!ok() || place < 0 || static_cast<size_t>(place) >= capacity_)
    return nullptr;
  return std::make_unique<Member>(*this, places_[place]);
}

} // namespace portico::backend
