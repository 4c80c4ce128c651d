// A structured mutator for proxy_wire_fuzz: half the time, it takes the script apart into its
// steps and changes what a client write says frame by frame, as HTTP/2 frames (a flag, a type,
// a stream id, a frame repeated, dropped, swapped, or a frame of a kind a flood is made of
// put in), keeping every length right so the frames stay frames. Byte mutations alone
// seldom get past the first frame's length field. The other half is libFuzzer's own.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

struct Step {
  uint8_t op;
  std::string arg; // the clock's byte
  std::string out; // a write's bytes
  bool write;
};

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kPrefaceLen = sizeof kPreface - 1;

std::vector<Step> parse(const uint8_t* p, const uint8_t* end) {
  std::vector<Step> steps;
  while (p < end) {
    Step s{*p++, {}, {}, false};
    uint8_t kind = s.op & 7;
    if (kind <= 2) {
      size_t n = 0;
      for (int i = 0; i < 2; ++i)
        n |= static_cast<size_t>(p < end ? *p++ : 0) << (8 * i);
      n = std::min(n, static_cast<size_t>(end - p));
      s.out.assign(reinterpret_cast<const char*>(p), n);
      s.write = true;
      p += n;
    } else if (kind == 3) {
      s.arg.assign(1, static_cast<char>(p < end ? *p++ : 0));
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

std::string serialise(uint8_t first, const std::vector<Step>& steps) {
  std::string out(1, static_cast<char>(first));
  for (const auto& s : steps) {
    out += static_cast<char>(s.op);
    if (s.write) {
      size_t n = std::min<size_t>(s.out.size(), 0xffff);
      out += static_cast<char>(n & 0xff);
      out += static_cast<char>(n >> 8);
      out.append(s.out, 0, n);
    }
    out += s.arg;
  }
  return out;
}

struct Frame {
  uint8_t type, flags;
  uint32_t stream;
  std::string payload;
};

// Splits bytes into the preface (if any), whole frames, and what is left after them.
bool split(const std::string& b, std::string& head, std::vector<Frame>& frames, std::string& tail) {
  size_t i = 0;
  if (b.compare(0, kPrefaceLen, kPreface) == 0)
    i = kPrefaceLen;
  head = b.substr(0, i);
  while (i + 9 <= b.size()) {
    auto u = [&](size_t k) { return static_cast<uint8_t>(b[i + k]); };
    size_t len = static_cast<size_t>(u(0)) << 16 | static_cast<size_t>(u(1)) << 8 | u(2);
    if (i + 9 + len > b.size())
      break;
    uint32_t sid = (static_cast<uint32_t>(u(5)) << 24 | static_cast<uint32_t>(u(6)) << 16 |
                    static_cast<uint32_t>(u(7)) << 8 | u(8)) &
                   0x7fffffffu;
    frames.push_back({u(3), u(4), sid, b.substr(i + 9, len)});
    i += 9 + len;
  }
  tail = b.substr(i);
  return !frames.empty() || !head.empty();
}

std::string join(const std::string& head, const std::vector<Frame>& frames,
                 const std::string& tail) {
  std::string out = head;
  for (const auto& f : frames) {
    size_t len = f.payload.size();
    char h[9] = {static_cast<char>(len >> 16),
                 static_cast<char>(len >> 8),
                 static_cast<char>(len),
                 static_cast<char>(f.type),
                 static_cast<char>(f.flags),
                 static_cast<char>(f.stream >> 24),
                 static_cast<char>(f.stream >> 16),
                 static_cast<char>(f.stream >> 8),
                 static_cast<char>(f.stream)};
    out.append(h, 9);
    out += f.payload;
  }
  return out + tail;
}

// Frames floods and odd clients are made of. The HEADERS block is a GET of "/" (static table
// entries and a literal :authority), valid on any connection.
Frame canned(std::mt19937& rng, uint32_t stream) {
  static const std::string kGet("\x82\x86\x84\x41\x01x", 6);
  switch (rng() % 10) {
  case 0: return {6, 0, 0, "12345678"};                                          // PING
  case 1: return {4, 0, 0, std::string("\x00\x04\x00\x00\xff\xff", 6)};          // SETTINGS
  case 2: return {4, 1, 0, ""};                                                  // SETTINGS ACK
  case 3: return {8, 0, stream, std::string("\x00\x00\x10\x00", 4)};             // WINDOW_UPDATE
  case 4: return {3, 0, stream, std::string("\x00\x00\x00\x08", 4)};             // RST_STREAM
  case 5: return {2, 0, stream, std::string("\x00\x00\x00\x00\x0f", 5)};         // PRIORITY
  case 6: return {0, 0, stream, ""};                                             // empty DATA
  case 7: return {1, 5, stream | 1, kGet};                                       // HEADERS
  case 8: return {9, 4, stream, ""};                                             // CONTINUATION
  default: return {7, 0, 0, std::string("\x00\x00\x00\x00\x00\x00\x00\x00", 8)}; // GOAWAY
  }
}

void mutate_frames(std::vector<Frame>& f, std::mt19937& rng) {
  uint32_t stream = f.empty() ? 1 : f[rng() % f.size()].stream;
  size_t i = f.empty() ? 0 : rng() % f.size();
  switch (f.empty() ? 6 : rng() % 8) {
  case 0: f[i].flags ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
  case 1: f[i].type = static_cast<uint8_t>(rng() % 10); break;
  case 2: f[i].stream = rng() % 4 == 0 ? 0 : (rng() % 16) * 2 + 1; break;
  case 3: {
    size_t copies = 1 + rng() % 64;
    for (size_t k = 0; k < copies; ++k)
      f.insert(f.begin() + static_cast<long>(i), f[i]);
    break;
  }
  case 4: f.erase(f.begin() + static_cast<long>(i)); break;
  case 5:
    if (f.size() > 1)
      std::swap(f[i], f[(i + 1) % f.size()]);
    break;
  case 6: {
    size_t at = f.empty() ? 0 : rng() % (f.size() + 1);
    size_t copies = rng() % 4 == 0 ? 1 + rng() % 200 : 1;
    Frame c = canned(rng, stream);
    f.insert(f.begin() + static_cast<long>(at), copies, c);
    break;
  }
  default: {
    std::string& p = f[i].payload;
    size_t n = p.size();
    if (n == 0) {
      p.assign(1, static_cast<char>(rng()));
      break;
    }
    p.resize(n + 64);
    p.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(p.data()), n, n + 64));
    break;
  }
  }
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::mt19937 rng(seed);
  if (size < 2 || rng() % 2 == 0)
    return LLVMFuzzerMutate(data, size, max_size);
  std::vector<Step> steps = parse(data + 1, data + size);
  std::vector<size_t> writes;
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].write && (steps[i].op & 7) != 2)
      writes.push_back(i);
  if (writes.empty())
    return LLVMFuzzerMutate(data, size, max_size);
  Step& s = steps[writes[rng() % writes.size()]];
  std::string head, tail;
  std::vector<Frame> frames;
  if (!split(s.out, head, frames, tail))
    return LLVMFuzzerMutate(data, size, max_size);
  mutate_frames(frames, rng);
  s.out = join(head, frames, tail);
  std::string out = serialise(data[0], steps);
  if (out.size() > max_size)
    return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
