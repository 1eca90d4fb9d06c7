"""A UCXX peer for ucx4j's interop tests (UcxxInteropTest): real UCXX (pip install ucxx-cu13), driven
over stdin/stdout one line at a time, so the Java test decides every step.

Start: ucxx_peer.py listen            -> prints "PORT <n>", accepts one client
       ucxx_peer.py connect HOST PORT -> connects to a ucx4j listener
       ucxx_peer.py address           -> prints "ADDRESS <hex>", reads "ADDRESS <hex>" (ucx4j's worker
                                         address) and connects to it
Then prints "READY" and runs commands until stdin closes:
  AM_RECV            -> am_recv on the endpoint; prints "AM <hex>"
  AM_SEND <hex>      -> am_send of those bytes; prints "SENT"
  TAG_RECV <tag> <n> -> worker tag_recv of up to n bytes; prints "TAG <hex>"
  TAG_SEND <tag> <hex> -> tag_send on the endpoint; prints "SENT"
Errors go to stderr and end the process with status 1.
"""
import sys
import time

import ucxx._lib.libucxx as ucx_api
from ucxx._lib.arr import Array

TIMEOUT_S = 60


def out(line):
    print(line, flush=True)


def wait(worker, request):
    deadline = time.monotonic() + TIMEOUT_S
    while not request.completed:
        if time.monotonic() > deadline:
            raise TimeoutError("UCXX request not completed within %d s" % TIMEOUT_S)
        time.sleep(0.0005)
    request.check_error()
    return request


def main():
    ctx = ucx_api.UCXContext(
        feature_flags=(ucx_api.Feature.TAG, ucx_api.Feature.AM, ucx_api.Feature.WAKEUP)
    )
    worker = ucx_api.UCXWorker(ctx)
    worker.start_progress_thread()
    mode = sys.argv[1]
    ep = [None]
    if mode == "listen":
        def on_connection(conn_request):
            ep[0] = listener.create_endpoint_from_conn_request(conn_request, True)

        listener = ucx_api.UCXListener.create(worker=worker, port=0, cb_func=on_connection)
        out("PORT %d" % listener.port)
        deadline = time.monotonic() + TIMEOUT_S
        while ep[0] is None:
            if time.monotonic() > deadline:
                raise TimeoutError("no ucx4j client within %d s" % TIMEOUT_S)
            time.sleep(0.001)
    elif mode == "connect":
        ep[0] = ucx_api.UCXEndpoint.create(worker, sys.argv[2], int(sys.argv[3]), True)
    elif mode == "address":
        out("ADDRESS " + ucx_api.UCXAddress.create_from_worker(worker).tobytes().hex())
        words = sys.stdin.readline().split()
        if len(words) != 2 or words[0] != "ADDRESS":
            raise ValueError("expected 'ADDRESS <hex>', got %r" % words)
        peer = ucx_api.UCXAddress.create_from_buffer(bytes.fromhex(words[1]))
        ep[0] = ucx_api.UCXEndpoint.create_from_worker_address(worker, peer, True)
    else:
        raise ValueError("unknown mode " + mode)
    out("READY")
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        cmd = words[0]
        if cmd == "AM_RECV":
            req = wait(worker, ep[0].am_recv())
            out("AM " + bytes(req.recv_buffer).hex())
        elif cmd == "AM_SEND":
            data = Array(bytearray.fromhex(words[1]))  # UCXX keeps no reference: hold it until sent
            wait(worker, ep[0].am_send(data))
            out("SENT")
        elif cmd == "TAG_RECV":
            buf = bytearray(int(words[2]))
            into = Array(buf)
            wait(worker, worker.tag_recv(into, tag=ucx_api.UCXXTag(int(words[1]))))
            out("TAG " + bytes(buf).hex())
        elif cmd == "TAG_SEND":
            data = Array(bytearray.fromhex(words[2]))
            wait(worker, ep[0].tag_send(data, tag=ucx_api.UCXXTag(int(words[1]))))
            out("SENT")
        else:
            raise ValueError("unknown command " + cmd)
    worker.stop_progress_thread()


if __name__ == "__main__":
    try:
        main()
    except BaseException as e:  # the Java side reads the reason from stderr
        print("ucxx_peer failed: %r" % (e,), file=sys.stderr, flush=True)
        sys.exit(1)
