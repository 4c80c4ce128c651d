# The app of the backend and stack suites for starman, the same as portico-backend's:
#   GET /        -> 200 text/plain "hello world\n"
#   GET /?id=ID  -> 200 application/json {"counter":N}, N counted in memcached under
#                   "counter:ID" (incr, and add "1" when the key is missing), like
#                   portico-backend --store memcached://HOST:PORT; the memcached address comes
#                   from $BENCH_MEMCACHED (set by bench/run). Pure Perl (the memcached text
#                   protocol over one IO::Socket::INET per worker): no module beyond Perl's own.
# Headers are a fresh array per request: the server may add to it.
use strict;
use warnings;
use IO::Socket::INET;
use Socket qw(IPPROTO_TCP TCP_NODELAY);

my $hello = "hello world\n";
my $hello_length = length $hello;
my $mc;  # this worker's memcached connection, opened on first use

sub mc_command {
    my ($cmd) = @_;
    for my $attempt (1, 2) {
        $mc ||= IO::Socket::INET->new(PeerAddr => $ENV{BENCH_MEMCACHED}, Timeout => 1)
            or die "memcached $ENV{BENCH_MEMCACHED}: $!";
        $mc->setsockopt(IPPROTO_TCP, TCP_NODELAY, 1);
        if (print {$mc} $cmd) {
            my $line = <$mc>;
            return $line if defined $line;
        }
        undef $mc;  # the connection broke: one retry on a new one
    }
    die "memcached: no answer";
}

sub increment {
    my ($key) = @_;
    for my $round (1, 2) {
        my $r = mc_command("incr $key 1\r\n");
        return $1 if $r =~ /^(\d+)\r\n$/;
        die "memcached incr: $r" unless $r =~ /^NOT_FOUND/;
        $r = mc_command("add $key 0 0 1\r\n1\r\n");
        return 1 if $r =~ /^STORED/;
        die "memcached add: $r" unless $r =~ /^NOT_STORED/;
    }
    die "counter contended";
}

sub {
    my ($env) = @_;
    my $qs = $env->{QUERY_STRING} // '';
    if ($qs =~ /(?:^|&)id=([A-Za-z0-9_-]{1,48})(?:&|$)/) {
        my $body = '{"counter":' . increment("counter:$1") . '}';
        return [200, ['Content-Type' => 'application/json', 'Content-Length' => length $body],
                [$body]];
    }
    return [200, ['Content-Type' => 'text/plain', 'Content-Length' => $hello_length], [$hello]];
};
