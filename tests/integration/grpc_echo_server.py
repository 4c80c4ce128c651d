"""A gRPC server from python3-grpcio, the real peer behind Portico in the gRPC tests, with
byte messages (no generated code): service test.Echo with Unary (the request back),
ServerStream (the request back three times, numbered), ClientStream (the requests joined),
Bidi (each request back as it comes), Slow (answers after the seconds its request names; a
deadline cuts it), Fail (status INVALID_ARGUMENT with a message, as trailers). Run as:
grpc_echo_server.py PORT; stops on SIGTERM."""
import signal
import sys
import threading
import time
from concurrent import futures

import grpc


def unary(request, context):
    return request


def server_stream(request, context):
    for i in range(3):
        yield request + b"-" + str(i).encode()


def client_stream(requests, context):
    return b"+".join(requests)


def bidi(requests, context):
    for r in requests:
        yield r


def slow(request, context):
    time.sleep(float(request.decode()))
    return b"late"


def fail(request, context):
    context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad request: " + request.decode())


def main(port):
    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream),
        "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi),
        "Slow": grpc.unary_unary_rpc_method_handler(slow),
        "Fail": grpc.unary_unary_rpc_method_handler(fail),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Echo", handlers),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    done.wait()
    server.stop(0)


if __name__ == "__main__":
    main(int(sys.argv[1]))
