#include "accept_balance.h"

#include <new>
#include <sys/mman.h>

namespace portico::backend {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;
} // namespace

class AcceptBalance::Member : public server::AcceptShare {
public:
  Member(const AcceptBalance& table, Place& mine) : table_(table), mine_(mine) {}

  void accepted(size_t held) override {
    mine_.held.store(static_cast<uint32_t>(held), kRelaxed);
    mine_.accepted.store(mine_.accepted.load(kRelaxed) + 1, kRelaxed); // one writer
  }
  void closed(size_t held) override { mine_.held.store(static_cast<uint32_t>(held), kRelaxed); }
  void set_accepting(bool accepting) override { mine_.accepting.store(accepting, kRelaxed); }

  bool another_holds_fewer(size_t mine) const override {
    uint32_t used = table_.header_->used.load(kRelaxed);
    for (uint32_t i = 0; i < used; ++i) {
      const Place& p = table_.places_[i];
      if (&p != &mine_ && p.owner.load(kRelaxed) != 0 && p.accepting.load(kRelaxed) &&
          p.held.load(kRelaxed) < mine)
        return true;
    }
    return false;
  }

  uint64_t accepted_by_all() const override {
    uint64_t sum = 0;
    uint32_t used = table_.header_->used.load(kRelaxed);
    for (uint32_t i = 0; i < used; ++i)
      sum += table_.places_[i].accepted.load(kRelaxed);
    return sum;
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

void AcceptBalance::forget(pid_t pid) {
  if (!ok() || pid <= 0)
    return;
  uint32_t used = header_->used.load(kRelaxed);
  for (uint32_t i = 0; i < used; ++i) {
    Place& p = places_[i];
    if (p.owner.load(kRelaxed) != pid)
      continue;
    p.accepting.store(false, kRelaxed);
    p.held.store(0, kRelaxed);
    p.owner.store(0, std::memory_order_release);
    return;
  }
}

std::unique_ptr<server::AcceptShare> AcceptBalance::join(pid_t pid) {
  if (!ok() || pid <= 0)
    return nullptr;
  for (size_t i = 0; i < capacity_; ++i) {
    Place& p = places_[i];
    pid_t free = 0;
    if (!p.owner.compare_exchange_strong(free, pid, std::memory_order_acquire))
      continue;
    p.held.store(0, kRelaxed);
    p.accepting.store(false, kRelaxed); // until the worker's acceptors start
    uint32_t used = header_->used.load(kRelaxed);
    while (used < i + 1 && !header_->used.compare_exchange_weak(used, uint32_t(i + 1), kRelaxed)) {
    }
    return std::make_unique<Member>(*this, p);
  }
  return nullptr;
}

} // namespace portico::backend
