# The hello app of the backend suite for starman: the same body and content type as
# portico-backend's `GET /`. Headers are a fresh array per request: the server may add to it.
use strict;
use warnings;

my $body = "hello world\n";
my $length = length $body;

sub { return [200, ['Content-Type' => 'text/plain', 'Content-Length' => $length], [$body]]; };
