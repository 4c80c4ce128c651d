"""A WebSocket echo server from python3-websockets, the real peer behind Portico in the
WebSocket tests: every message comes back as it went (text as text, binary as binary, any
size), /slow waits for nothing and sends nothing (an idle tunnel), /reject answers the
handshake with 403. Run as: ws_echo_server.py PORT; stops on SIGTERM."""
import asyncio
import http
import signal
import sys

import websockets


async def handler(ws, path):
    try:
        if path.startswith("/slow"):
            await ws.wait_closed()
            return
        async for message in ws:
            await ws.send(message)
    finally:
        # What the peer's close frame said (test_proxy_goodbye reads it here).
        print(f"closed {path} code {ws.close_code}", flush=True)


async def refuse(path, headers):
    if path.startswith("/reject"):
        return http.HTTPStatus.FORBIDDEN, [("x-refused", "yes")], b"no\n"
    return None


async def main(port):
    stop = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set_result, None)
    async with websockets.serve(handler, "127.0.0.1", port, max_size=None,
                                process_request=refuse, compression=None):
        await stop


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
