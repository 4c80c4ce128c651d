#pragma once
// The fetches in flight of one route's cache across its workers, so that a miss storm spread
// over every worker still reaches the origin once: a miss for a key another worker is fetching
// waits for that fetch instead of making its own. Only misses touch it (a mutex between the
// route's workers, never taken on a hit). A waiting member streams the fetch: it gets a copy of
// the head once stored, then each piece of the body as it arrives (one that comes in the
// middle gets what arrived so far at once), so a large response is not held back
// from it until complete; one that comes after the last piece gets the complete stored
// response, immutable from then on. Each is handed to the waiting worker's loop (its mailbox),
// never read there from the fetching worker's buffers. The fetching member takes the lock for
// a piece only while some member wants it (a flag it reads without the lock).
#include "cache/stored_response.h"

#include <atomic>
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
    // From the fetching member's thread: its response's head, stored, to copy; then each
    // piece of its body (fill_data), then fill_done.
    virtual void fill_head(const std::string& key, const cache::StoredResponse& head) = 0;
    virtual void fill_data(const std::string& key, std::string_view data) = 0;
    // From another member's thread: a member waits on this one's fetch of key, whose head is
    // stored; a grow() with no new data sends it what arrived so far.
    virtual void fill_wanted(const std::string& key) = 0;

  protected:
    ~Member() = default;
  };

  using Wanted = std::shared_ptr<std::atomic<bool>>;
  // A flag set while another member waits on by's fetch of key (by passes its body on with
  // grow() then), when by fetches key now and must call release() when it ends; null: another
  // member is fetching it, and by hears from that fetch (fill_head, fill_data, fill_done).
  Wanted claim(std::string_view key, Member* by);
  // by's fetch of key is stored with head: the members waiting now stream it.
  void share(std::string_view key, Member* by, const cache::StoredResponse& head);
  // by's fetch of key, stored as r, grew by data (the end of r's body).
  void grow(std::string_view key, Member* by, const cache::StoredResponse& r,
            std::string_view data);
  // by's fetch of key ended with r (null: not stored): the members waiting on it hear.
  void release(std::string_view key, Member* by, std::shared_ptr<cache::StoredResponse> r);
  // A member going away: its fetches end with nothing, it hears of no other.
  void leave(Member* m);

private:
  struct Entry {
    Member* owner;
    Wanted wanted;
    bool shared = false;            // the head is stored
    std::vector<Member*> waiting;   // to be sent the head (and what body there is)
    std::vector<Member*> streaming; // sent the head: sent each piece
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> entries_;
};

} // namespace portico::filters
