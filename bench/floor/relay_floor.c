/* The floor of a reverse proxy on this machine: a relay that does nothing of HTTP. One thread,
 * epoll (level-triggered), one origin connection per client connection made when the client
 * connects, then every chunk one read(2) from one side and one write(2) to the other. No
 * parsing, no buffering beyond a write the peer's socket could not take whole, no pooling of
 * origin connections across clients: what it costs per request is the kernel's socket work for
 * the request and the response on both hops, which any proxy must do too. It relays whatever
 * the client speaks (HTTP/1.1 or h2c), so its row compares with proxies whose client and
 * upstream protocols are the same.
 *
 * With TLS_PORT, CERT and KEY it also terminates TLS there (OpenSSL, as every peer here): the
 * handshake, then each chunk one SSL_read (read ahead: one read(2) takes every record the
 * socket holds) and one SSL_write, relaying the plaintext (HTTP/1.1, or h2 by ALPN, to an
 * origin that speaks h2c). Its cipher choice is the cheapest any proxy may make, and Portico's
 * default: AES-128-GCM first, the server's preference. Its buffers are never released, which
 * costs memory and saves allocations.
 *
 * bench/run's proxy suite builds it with cc and runs it as the row "floor (relay)".
 * Usage: relay_floor PORT ORIGIN [TLS_PORT CERT KEY]
 *   ORIGIN: a unix socket path, or HOST:PORT */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
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
  SSL *ssl;        /* a TLS client's side; NULL for plaintext, and for the origin's side */
  int ready;       /* the handshake is done (always, without TLS) */
  int hs_write;    /* the handshake waits to write */
  unsigned events; /* what epoll watches for: 0 when it does not hold the socket */
  char *pending;   /* what the peer's socket did not take, while this side's reading waits */
  size_t off, len;
};

static int ep;
/* Pairs closed during one epoll_wait batch, freed after it: a later event of the same batch
 * may name them. */
static struct side *graveyard[512];
static int buried;
static struct sockaddr_storage origin;
static socklen_t origin_len;
static SSL_CTX *tls;
/* The listeners' epoll tags. */
static struct side plain_listener = {.fd = -1}, tls_listener = {.fd = -1};

/* Watches s for what it waits for: reading unless it holds bytes its peer did not take yet,
 * writing while the peer holds bytes for it (or its handshake waits to write). A side that
 * waits for neither leaves epoll altogether: epoll reports a hang-up even to a socket it
 * watches for nothing, and reading on at that one would overwrite the bytes held. */
static void update(struct side *s) {
  unsigned want = (s->off < s->len ? 0 : EPOLLIN) |
                  (s->peer->off < s->peer->len || s->hs_write ? EPOLLOUT : 0);
  if (want == s->events)
    return;
  struct epoll_event e = {.events = want, .data.ptr = s};
  epoll_ctl(ep, !s->events ? EPOLL_CTL_ADD : !want ? EPOLL_CTL_DEL : EPOLL_CTL_MOD, s->fd, &e);
  s->events = want;
}

static void close_pair(struct side *s) {
  struct side *p = s->peer;
  SSL_free(s->ssl ? s->ssl : p->ssl);
  s->ssl = p->ssl = NULL;
  close(s->fd);
  close(p->fd);
  s->fd = p->fd = -1;
  graveyard[buried++] = s < p ? s : p; /* both sides are one allocation */
}

#define WOULD_BLOCK (-2)

/* Bytes read into buf, 0 at the end, -1 on an error, WOULD_BLOCK when nothing came yet. */
static ssize_t side_read(struct side *s, char *buf, size_t len) {
  if (!s->ssl) {
    ssize_t n = read(s->fd, buf, len);
    return n < 0 && errno == EAGAIN ? WOULD_BLOCK : n;
  }
  /* The first SSL_read reads the socket; the records it read ahead are taken without another
   * read(2), which would only say EAGAIN. */
  size_t got = 0, n;
  do {
    if (SSL_read_ex(s->ssl, buf + got, len - got, &n) != 1) {
      int e = SSL_get_error(s->ssl, 0);
      ERR_clear_error();
      if (got > 0 || e == SSL_ERROR_WANT_READ)
        break;
      return e == SSL_ERROR_ZERO_RETURN ? 0 : -1;
    }
    got += n;
  } while (got < len && SSL_has_pending(s->ssl));
  return got > 0 ? (ssize_t)got : WOULD_BLOCK;
}

/* Bytes written (fewer than len when the socket is full), -1 on an error, WOULD_BLOCK when
 * none went. A TLS write the socket did not take is retried with the same bytes, as OpenSSL
 * requires: they are what the caller keeps pending. */
static ssize_t side_write(struct side *s, const char *buf, size_t len) {
  if (!s->ssl) {
    ssize_t n = write(s->fd, buf, len);
    return n < 0 && errno == EAGAIN ? WOULD_BLOCK : n;
  }
  size_t done = 0, n;
  while (done < len) {
    if (SSL_write_ex(s->ssl, buf + done, len - done, &n) != 1) {
      int e = SSL_get_error(s->ssl, 0);
      ERR_clear_error();
      if (e != SSL_ERROR_WANT_WRITE)
        return -1;
      break;
    }
    done += n;
  }
  return done > 0 ? (ssize_t)done : WOULD_BLOCK;
}

/* Writes what from has pending to its peer; 0 once all of it went. */
static int drain(struct side *from) {
  while (from->off < from->len) {
    ssize_t n = side_write(from->peer, from->pending + from->off, from->len - from->off);
    if (n < 0)
      return n == WOULD_BLOCK ? 1 : -1;
    from->off += (size_t)n;
  }
  return 0;
}

/* Moves the TLS handshake of s on: 1 once it is done; 0 while it waits for the socket, or
 * when it failed (the pair is closed then). */
static int handshake(struct side *s) {
  int r = SSL_do_handshake(s->ssl);
  int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(s->ssl, r);
  ERR_clear_error();
  if (e == SSL_ERROR_NONE || e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    s->ready = r == 1;
    s->hs_write = e == SSL_ERROR_WANT_WRITE;
    update(s);
    return s->ready;
  }
  close_pair(s);
  return 0;
}

static void relay_chunk(struct side *s) {
  static char buf[CHUNK];
  ssize_t n = side_read(s, buf, sizeof buf);
  if (n <= 0) {
    if (n == WOULD_BLOCK)
      return;
    close_pair(s);
    return;
  }
  ssize_t w = side_write(s->peer, buf, (size_t)n);
  if (w == n)
    return;
  if (w == -1) {
    close_pair(s);
    return;
  }
  /* The peer is full: keep the rest, stop reading this side until it has gone. */
  size_t done = w < 0 ? 0 : (size_t)w;
  s->pending = realloc(s->pending, (size_t)n - done);
  memcpy(s->pending, buf + done, (size_t)n - done);
  s->off = 0;
  s->len = (size_t)n - done;
  update(s);
  update(s->peer);
}

static void on_readable(struct side *s) {
  if (!s->ready && !handshake(s))
    return;
  if (s->off < s->len)
    return; /* a hang-up while both sides wait to write: the writes will say it */
  /* What TLS read ahead is no socket event: relay it while it lasts, unless the peer is full. */
  do
    relay_chunk(s);
  while (s->fd >= 0 && s->ssl && s->off >= s->len && SSL_has_pending(s->ssl));
}

static void on_writable(struct side *to) {
  if (!to->ready) {
    if (handshake(to) && to->fd >= 0)
      on_readable(to);
    return;
  }
  struct side *from = to->peer;
  int r = drain(from);
  if (r < 0) {
    close_pair(to);
    return;
  }
  if (r == 0) {
    from->len = from->off = 0;
    update(to);
    update(from);
    if (from->ssl && SSL_has_pending(from->ssl))
      on_readable(from); /* records read ahead while from waited: no socket event brings them */
  }
}

static void on_accept(struct side *listener) {
  for (;;) {
    int c = accept4(listener->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
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
    pair[0] = (struct side){.fd = c, .peer = &pair[1], .ready = 1};
    pair[1] = (struct side){.fd = o, .peer = &pair[0], .ready = 1};
    if (listener == &tls_listener) {
      pair[0].ssl = SSL_new(tls);
      pair[0].ready = 0;
      SSL_set_fd(pair[0].ssl, c);
      SSL_set_accept_state(pair[0].ssl);
    }
    update(&pair[0]);
    update(&pair[1]);
  }
}

static int listen_on(const char *port, struct side *tag) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 4096) < 0) {
    perror("relay_floor: listen");
    return -1;
  }
  tag->fd = lfd;
  struct epoll_event le = {.events = EPOLLIN, .data.ptr = tag};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &le);
  return 0;
}

/* ALPN: h2 when the client offers it (relayed to the origin as h2c), else HTTP/1.1. */
static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg) {
  static const unsigned char ours[] = "\x02h2\x08http/1.1";
  (void)ssl;
  (void)arg;
  if (SSL_select_next_proto((unsigned char **)out, outlen, ours, sizeof ours - 1, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *tls_context(const char *cert, const char *key) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  static const unsigned char id[] = "relay_floor";
  if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_set_ciphersuites(
          ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256") != 1 ||
      SSL_CTX_set_cipher_list(ctx, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                                   "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384") !=
          1) {
    ERR_print_errors_fp(stderr);
    return NULL;
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_session_id_context(ctx, id, sizeof id - 1); /* resumption by id, as by ticket */
  SSL_CTX_set_alpn_select_cb(ctx, select_alpn, NULL);
  return ctx;
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 6) {
    fprintf(stderr, "usage: relay_floor PORT ORIGIN [TLS_PORT CERT KEY]\n"
                    "  ORIGIN: a unix socket path, or HOST:PORT\n");
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
  ep = epoll_create1(EPOLL_CLOEXEC);
  if (listen_on(argv[1], &plain_listener) < 0)
    return 1;
  if (argc == 6 && (!(tls = tls_context(argv[4], argv[5])) || listen_on(argv[3], &tls_listener) < 0))
    return 1;
  struct epoll_event ev[256];
  for (;;) {
    int n = epoll_wait(ep, ev, 256, -1);
    for (int i = 0; i < n; ++i) {
      struct side *s = ev[i].data.ptr;
      if (s == &plain_listener || s == &tls_listener) {
        on_accept(s);
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
