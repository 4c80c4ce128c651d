/* The floor of a cache hit over HTTP/1.1 on this machine: a server that does nothing but
 * what any cache must do for a hit, with nothing of HTTP it can skip. One thread, epoll,
 * keep-alive; it reads a request up to its blank line, takes n=N from the target (1024 by
 * default), and answers with a fixed head sent with MSG_MORE and N bytes by sendfile(2) from
 * a memory file, as Portico and nginx send a stored body. No parsing beyond that, no fields,
 * no cache lookup, no pipelining: what it costs per request is the kernel's work for the
 * request and the response, which no cache can go below. Small bodies go by sendfile too,
 * which costs more than a copy below a few KiB: on 1 KiB this row is not a floor (Portico
 * copies such bodies and costs less); it is one on 100 KiB, where a copy costs the same.
 *
 * bench/run's cache suite builds it with cc and runs it as the row "floor (sendfile)".
 * Usage: hit_floor PORT */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_BODY (1 << 20)

struct conn {
  int fd;
  char in[8192];
  size_t have;
  off_t off, end; /* the body still to send */
};

static int body_fd;

static void answer(struct conn *c) {
  char *target = memchr(c->in, ' ', c->have);
  long n = 1024;
  char *q = target ? strstr(target, "n=") : NULL;
  if (q)
    n = strtol(q + 2, NULL, 10);
  if (n < 0 || n > MAX_BODY)
    n = MAX_BODY;
  char head[128];
  int len = snprintf(head, sizeof head,
                     "HTTP/1.1 200 OK\r\nContent-Length: %ld\r\nContent-Type: text/plain\r\n\r\n",
                     n);
  send(c->fd, head, (size_t)len, MSG_MORE);
  c->off = 0;
  c->end = n;
}

/* Sends what it can of the body; 0 when all is sent, 1 to wait for room, -1 on error. */
static int pump(struct conn *c) {
  while (c->off < c->end) {
    ssize_t s = sendfile(c->fd, body_fd, &c->off, (size_t)(c->end - c->off));
    if (s < 0)
      return errno == EAGAIN ? 1 : -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PORT\n", argv[0]);
    return 2;
  }
  /* A write to a connection its client has reset is that connection's error (EPIPE), as in
   * every server, not the end of the floor. */
  signal(SIGPIPE, SIG_IGN);
  body_fd = memfd_create("floor-body", MFD_CLOEXEC);
  char *fill = malloc(MAX_BODY);
  memset(fill, 'x', MAX_BODY);
  if (body_fd < 0 || write(body_fd, fill, MAX_BODY) != MAX_BODY)
    return perror("memfd"), 1;
  free(fill);
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4096))
    return perror("listen"), 1;
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  struct epoll_event evs[256];
  for (;;) {
    int k = epoll_wait(ep, evs, 256, -1);
    for (int i = 0; i < k; ++i) {
      struct conn *c = evs[i].data.ptr;
      if (!c) {
        int fd;
        while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          c = calloc(1, sizeof *c);
          c->fd = fd;
          struct epoll_event ce = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ce);
        }
        continue;
      }
      int state = 0;
      if (c->off < c->end)
        state = pump(c);
      while (state == 0) {
        ssize_t r = read(c->fd, c->in + c->have, sizeof c->in - c->have);
        if (r == 0 || (r < 0 && errno != EAGAIN)) {
          state = -1;
          break;
        }
        if (r < 0)
          break;
        c->have += (size_t)r;
        char *blank = memmem(c->in, c->have, "\r\n\r\n", 4);
        if (!blank) {
          if (c->have == sizeof c->in)
            state = -1;
          continue;
        }
        answer(c);
        c->have = 0; /* one request at a time: wrk does not pipeline */
        state = pump(c);
      }
      if (state < 0) {
        close(c->fd);
        free(c);
      }
    }
  }
}
