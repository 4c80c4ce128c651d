/* The floor of a reverse proxy on this machine: a relay that does nothing of HTTP. One thread,
 * epoll (level-triggered), one origin connection per client connection made when the client
 * connects, then every chunk one read(2) from one side and one write(2) to the other. No
 * parsing, no buffering beyond a write the peer's socket could not take whole, no pooling of
 * origin connections across clients: what it costs per request is the kernel's socket work for
 * the request and the response on both hops, which any proxy must do too. It relays whatever
 * the client speaks (HTTP/1.1 or h2c), so its row compares with proxies whose client and
 * upstream protocols are the same.
 *
 * bench/run's proxy suite builds it with cc and runs it as the row "floor (relay)".
 * Usage: relay_floor PORT ORIGIN   (ORIGIN: a unix socket path, or HOST:PORT) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define CHUNK 65536

struct side {
  int fd;
  struct side *peer;
  char *pending; /* what the peer's socket did not take, while this side's reading waits */
  size_t off, len;
};

static int ep;
/* Pairs closed during one epoll_wait batch, freed after it: a later event of the same batch
 * may name them. */
static struct side *graveyard[512];
static int buried;
static struct sockaddr_storage origin;
static socklen_t origin_len;

static void watch(struct side *s, int op, unsigned events) {
  struct epoll_event e = {.events = events, .data.ptr = s};
  epoll_ctl(ep, op, s->fd, &e);
}

static void close_pair(struct side *s) {
  struct side *p = s->peer;
  close(s->fd);
  close(p->fd);
  s->fd = p->fd = -1;
  graveyard[buried++] = s < p ? s : p; /* both sides are one allocation */
}

/* Writes what from has pending to its peer; 0 once all of it went. */
static int drain(struct side *from) {
  while (from->off < from->len) {
    ssize_t n = write(from->peer->fd, from->pending + from->off, from->len - from->off);
    if (n < 0)
      return errno == EAGAIN ? 1 : -1;
    from->off += (size_t)n;
  }
  return 0;
}

static void on_readable(struct side *s) {
  static char buf[CHUNK];
  ssize_t n = read(s->fd, buf, sizeof buf);
  if (n <= 0) {
    if (n < 0 && errno == EAGAIN)
      return;
    close_pair(s);
    return;
  }
  ssize_t w = write(s->peer->fd, buf, (size_t)n);
  if (w == n)
    return;
  if (w < 0 && errno != EAGAIN) {
    close_pair(s);
    return;
  }
  /* The peer is full: keep the rest, stop reading this side until it has gone. */
  size_t done = w < 0 ? 0 : (size_t)w;
  s->pending = realloc(s->pending, (size_t)n - done);
  memcpy(s->pending, buf + done, (size_t)n - done);
  s->off = 0;
  s->len = (size_t)n - done;
  watch(s, EPOLL_CTL_MOD, 0);
  watch(s->peer, EPOLL_CTL_MOD, EPOLLIN | EPOLLOUT);
}

static void on_writable(struct side *to) {
  struct side *from = to->peer;
  int r = drain(from);
  if (r < 0) {
    close_pair(to);
    return;
  }
  if (r == 0) {
    from->len = from->off = 0;
    watch(to, EPOLL_CTL_MOD, EPOLLIN);
    watch(from, EPOLL_CTL_MOD, EPOLLIN);
  }
}

static void on_accept(int lfd) {
  for (;;) {
    int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0)
      return;
    int o = socket(origin.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (o < 0 || connect(o, (struct sockaddr *)&origin, origin_len) < 0) {
      close(c);
      if (o >= 0)
        close(o);
      continue;
    }
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (origin.ss_family == AF_INET)
      setsockopt(o, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(o, F_SETFL, O_NONBLOCK);
    struct side *pair = calloc(2, sizeof *pair);
    pair[0] = (struct side){.fd = c, .peer = &pair[1]};
    pair[1] = (struct side){.fd = o, .peer = &pair[0]};
    watch(&pair[0], EPOLL_CTL_ADD, EPOLLIN);
    watch(&pair[1], EPOLL_CTL_ADD, EPOLLIN);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: relay_floor PORT ORIGIN (a unix socket path, or HOST:PORT)\n");
    return 2;
  }
  char *colon = strrchr(argv[2], ':');
  if (argv[2][0] == '/' || !colon) {
    struct sockaddr_un *u = (struct sockaddr_un *)&origin;
    u->sun_family = AF_UNIX;
    snprintf(u->sun_path, sizeof u->sun_path, "%s", argv[2]);
    origin_len = sizeof *u;
  } else {
    struct sockaddr_in *in = (struct sockaddr_in *)&origin;
    *colon = 0;
    in->sin_family = AF_INET;
    in->sin_port = htons((uint16_t)atoi(colon + 1));
    inet_pton(AF_INET, argv[2], &in->sin_addr);
    origin_len = sizeof *in;
  }
  /* A write to a connection whose reader is gone is that pair's error (EPIPE), as in every
   * proxy, not the end of the relay. */
  signal(SIGPIPE, SIG_IGN);
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 4096) < 0) {
    perror("relay_floor: listen");
    return 1;
  }
  ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event le = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &le);
  struct epoll_event ev[256];
  for (;;) {
    int n = epoll_wait(ep, ev, 256, -1);
    for (int i = 0; i < n; ++i) {
      struct side *s = ev[i].data.ptr;
      if (!s) {
        on_accept(lfd);
        continue;
      }
      if (s->fd < 0)
        continue; /* its pair closed earlier in this batch */
      if (ev[i].events & EPOLLOUT)
        on_writable(s);
      else if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        on_readable(s);
    }
    while (buried > 0) {
      struct side *pair = graveyard[--buried];
      free(pair[0].pending);
      free(pair[1].pending);
      free(pair);
    }
  }
}
