#pragma once
// The fetches in flight of one route's cache across its workers, so that a miss storm spread
// over every worker still reaches the origin once: a miss for a key another worker is fetching
// waits for that fetch instead of making its own. Only misses touch it (a mutex between the
// route's workers, never taken on a hit); what crosses over is the complete stored response,
// immutable from then on, handed to the waiting worker's loop (Member::fill_done).
#include "cache/stored_response.h"

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace portico::filters {

class SharedFills {
public:
  // A worker's cache zone for the route.
  class Member {
  public:
    // From any thread: the fetch of key another member made is over, with r (null: nothing
    // to share, its waiters fetch themselves). Takes the member's own lock, never this one's
    // waiters' loops directly.
    virtual void fill_done(const std::string& key, std::shared_ptr<cache::StoredResponse> r) = 0;

  protected:
    ~Member() = default;
  };

  // True: by fetches key now, and must call release() when it ends. False: another member is
  // fetching it, and by hears its end through fill_done.
  bool claim(std::string_view key, Member* by);
  // by's fetch of key ended with r (null: not stored): the members waiting on it hear.
  void release(std::string_view key, Member* by, std::shared_ptr<cache::StoredResponse> r);
  // A member going away: its fetches end with nothing, it hears of no other.
  void leave(Member* m);

private:
  struct Entry {
    Member* owner;
    std::vector<Member*> waiting;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> entries_;
};

} // namespace portico::filters
