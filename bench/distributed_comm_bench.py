#!/usr/bin/env python3
"""Benchmark of Dask distributed's comm layer (distributed.comm.connect / distributed.comm.listen), the
Python counterpart of `bin/ucx4j bench --comm ucx|tcp`, for bench/vs-distributed-ucxx.sh.

Schemes:
  ucxx  distributed-ucxx (PyPI: distributed-ucxx-cu13, UCX from the libucx-cu13 wheel), URI ucxx://;
        runs on CPU-only machines. UCX's own settings (UCX_TLS, ...) come from the environment, which
        distributed-ucxx lets override its Dask config; UCX_TLS unset is UCX's default: on loopback, with
        the peer error handling that ucxx endpoints ask for, UCX 1.21 picks tcp/lo, not shared memory
        (UCX_PROTO_INFO=y shows it).
        Progress: distributed-ucxx asks ucxx for its "blocking" progress mode (what Dask runs) unless
        UCXPY_PROGRESS_MODE is set (thread, polling); nothing else needs configuring on a CPU-only host.
  tcp   distributed's own TCP comm (Tornado IOStream), URI tcp://.

Two OS processes on loopback: the client (this process) starts a server, `python3 THIS --serve`, reads
the address it listens on from the server's stdout, connects, measures, tells it to stop, and waits
for it. Both sides open their comms with deserialize=False, as a Dask scheduler forwarding data does.

How frames are sent: each message is {"op": ..., "data": Serialized(header, frames)}, where frames are
F numpy uint8 host arrays of S bytes. distributed.protocol.dumps writes a Serialized object's frames
as they are (no pickle, no compression, no copy in Python; `serializers=` is not consulted for it):
on the wire a message is msgpack's small frame for the dict, a small msgpack sub-header, and the F
data frames. The receiver, with deserialize=False, gets the same Serialized object back, its frames
being the buffers the comm received into (host_array) -- the server echoes it as it came. So what is
measured is the comm (framing, the transport, asyncio), not serialization. Per message, the ucxx
comm sends two small metadata messages (frame count; per-frame sizes and CUDA flags) and then one UCX
tag message per non-empty frame, F+2 of them; the tcp comm writes a length prelude and the frames, and
joins everything into one buffer when the message is small (< 128 KiB).

Workloads:
  latency    ping-pong: the client writes one message, the server writes the same frames back; after
             --warmup untimed round trips, --iters timed ones. Reports round trips per second (iters
             over the timed loop's wall time) and one-way latency p50/p99 in usec (half of each round
             trip, nearest-rank percentiles).
  bandwidth  the client writes --iters messages back to back (each write awaited, as Dask does: no
             window beyond what the comm itself buffers), then an "ack" request; the server reads them
             all, checks the byte count and answers. Timed from the first write until the answer is
             read; --warmup messages (and their ack) go first, untimed. Reports payload MB/s, MB = 2^20
             bytes, payload = iters * frames * size (headers not counted).

  build-cache/venv-distributed-ucxx/bin/python bench/distributed_comm_bench.py --scheme ucxx --mode latency --frames 1 --size 1024 \
      --iters 10000 --warmup 1000 --json
Progress goes to stderr; with --json stdout gets one line of JSON, else a short text summary. UCX
writes its own log lines (e.g. "unused environment variable: UCX_MEMTYPE_CACHE", which ucxx sets) to
stdout: both processes point fd 1 at stderr, so stdout carries only this script's result.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import queue
import subprocess
import sys
import threading
import time

IMPL = {"ucxx": "distributed-ucxx", "tcp": "distributed-tcp"}
READY = "LISTENING "


def log(*args) -> None:
    print("distributed_comm_bench:", *args, file=sys.stderr, flush=True)


def claim_stdout():
    """Keeps fd 1 for this script's own output and points fd 1 at stderr, so that what native code
    prints (UCX logs its warnings to stdout) goes to stderr. Returns a file on the kept stdout."""
    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(fd, "w", buffering=1)


def nbytes_of(frames) -> int:
    from distributed.utils import nbytes

    return sum(nbytes(f) for f in frames)


# --- server ---------------------------------------------------------------------------------------


async def serve(scheme: str, host: str, accept_timeout: float, out) -> int:
    from distributed.comm import listen
    from distributed.comm.core import CommClosedError

    done = asyncio.get_running_loop().create_future()

    async def handle(comm) -> None:
        received = 0
        try:
            while True:
                msg = await comm.read()
                op = msg["op"]
                if op == "ping":
                    await comm.write({"op": "pong", "data": msg["data"]})
                elif op == "data":
                    received += nbytes_of(msg["data"].frames)
                elif op == "ack":
                    await comm.write({"op": "ack", "bytes": received})
                    received = 0
                elif op == "stop":
                    await comm.write({"op": "stopped"})
                    break
                else:
                    raise ValueError(f"unknown op {op!r}")
        except CommClosedError:
            log("server: the client went away")
        except BaseException as e:  # report it, then let the server exit
            if not done.done():
                done.set_exception(e)
            return
        finally:
            await comm.close()
        if not done.done():
            done.set_result(None)

    listener = listen(f"{scheme}://{host}:0", handle, deserialize=False)
    await listener.start()
    print(READY + listener.contact_address, file=out, flush=True)
    try:
        await asyncio.wait_for(done, accept_timeout)
        await asyncio.sleep(0.1)  # let the comm handler return before the listener goes (ucxx warns otherwise)
    finally:
        listener.stop()
    return 0


# --- client ---------------------------------------------------------------------------------------


def start_server(args) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, os.path.abspath(__file__), "--serve", "--scheme", args.scheme, "--host", args.host,
           "--timeout", str(args.timeout)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    lines: queue.Queue = queue.Queue()

    def drain() -> None:  # the address line to the queue, anything else to stderr, until EOF
        for line in proc.stdout:
            if line.startswith(READY):
                lines.put(line[len(READY):].strip())
            else:
                sys.stderr.write(line)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    try:
        address = lines.get(timeout=60)
    except queue.Empty:
        address = None
    if address is None:
        proc.kill()
        raise SystemExit(f"distributed_comm_bench: the server did not start (exit code {proc.poll()})")
    return proc, address


def percentile(sorted_values: list[float], p: float) -> float:
    return sorted_values[max(0, math.ceil(p / 100 * len(sorted_values)) - 1)]


async def run_client(args, address: str) -> dict:
    import numpy as np
    from distributed.comm import connect
    from distributed.protocol.serialize import Serialized

    comm = await connect(address, deserialize=False, timeout=30)
    arrays = [np.full(args.size, (i * 37 + 1) % 256, dtype=np.uint8) for i in range(args.frames)]
    payload = Serialized({"bench": "frames"}, arrays)
    total = args.frames * args.size
    result = {"impl": IMPL[args.scheme], "scheme": args.scheme, "mode": args.mode, "frames": args.frames,
              "size": args.size, "iterations": args.iters, "round_trips_per_s": None, "latency_us_p50": None,
              "latency_us_p99": None, "bandwidth_mbps": None}

    if args.mode == "latency":
        ping = {"op": "ping", "data": payload}

        async def round_trip():
            await comm.write(ping)
            return await comm.read()

        # One checked round trip: same frame count, sizes and contents back.
        reply = await round_trip()
        back = reply["data"].frames
        if reply["op"] != "pong" or len(back) != args.frames or any(
                bytes(memoryview(b).cast("B")) != a.tobytes() for a, b in zip(arrays, back)):
            raise SystemExit("distributed_comm_bench: the echo differs from what was sent")
        for _ in range(args.warmup):
            await round_trip()
        log(f"{args.scheme}: {args.warmup} warm-up round trips done; timing {args.iters}")
        rtts = [0.0] * args.iters
        clock = time.perf_counter_ns
        start = clock()
        for i in range(args.iters):
            t0 = clock()
            await comm.write(ping)
            reply = await comm.read()
            rtts[i] = clock() - t0
        elapsed = (clock() - start) / 1e9
        if nbytes_of(reply["data"].frames) != total:
            raise SystemExit("distributed_comm_bench: short echo")
        one_way_us = sorted(r / 2e3 for r in rtts)
        result.update(round_trips_per_s=args.iters / elapsed, latency_us_p50=percentile(one_way_us, 50),
                      latency_us_p99=percentile(one_way_us, 99))
    else:
        data = {"op": "data", "data": payload}

        async def stream(n: int) -> float:
            start = time.perf_counter()
            for _ in range(n):
                await comm.write(data)
            await comm.write({"op": "ack"})
            ack = await comm.read()
            elapsed = time.perf_counter() - start
            if ack["op"] != "ack" or ack["bytes"] != n * total:
                raise SystemExit(f"distributed_comm_bench: server received {ack.get('bytes')} B, sent {n * total}")
            return elapsed

        if args.warmup:
            await stream(args.warmup)
        log(f"{args.scheme}: {args.warmup} warm-up messages done; timing {args.iters}")
        elapsed = await stream(args.iters)
        result["bandwidth_mbps"] = args.iters * total / elapsed / 2**20

    await comm.write({"op": "stop"})
    await comm.read()
    await comm.close()
    return result


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for name in ("distributed", "distributed-ucxx-cu13", "ucxx-cu13", "libucx-cu13", "numpy"):
        try:
            out.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            pass
    return ", ".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scheme", choices=sorted(IMPL), default="ucxx")
    ap.add_argument("--mode", choices=("latency", "bandwidth"), default="latency")
    ap.add_argument("--frames", type=int, default=1, help="frames per message (default 1)")
    ap.add_argument("--size", type=int, default=1024, help="bytes per frame (default 1024)")
    ap.add_argument("--iters", type=int, default=None,
                    help="timed round trips or messages (default 10000 for latency, 20 for bandwidth)")
    ap.add_argument("--warmup", type=int, default=None,
                    help="untimed round trips or messages first (default 1000 for latency, 2 for bandwidth)")
    ap.add_argument("--json", action="store_true", help="print one line of JSON on stdout")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--timeout", type=float, default=600, help="seconds before giving up (default 600)")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    out = claim_stdout()
    if args.serve:
        return asyncio.run(serve(args.scheme, args.host, args.timeout, out))
    if args.frames < 1 or args.size < 1:
        ap.error("--frames and --size must be at least 1")
    if args.iters is None:
        args.iters = 10000 if args.mode == "latency" else 20
    if args.warmup is None:
        args.warmup = 1000 if args.mode == "latency" else 2
    if args.iters < 1 or args.warmup < 0:
        ap.error("--iters must be at least 1 and --warmup at least 0")

    log(f"{args.scheme} {args.mode}, {args.frames} x {args.size} B, {args.iters} iterations "
        f"({args.warmup} warm-up), UCX_TLS={os.environ.get('UCX_TLS', '(unset)')}; {versions()}")
    proc, address = start_server(args)
    log(f"server pid {proc.pid} listening on {address}")
    try:
        result = asyncio.run(asyncio.wait_for(run_client(args, address), args.timeout))
    except BaseException:
        proc.kill()
        raise
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise SystemExit("distributed_comm_bench: the server did not exit")
    if rc != 0:
        raise SystemExit(f"distributed_comm_bench: the server exited with {rc}")

    if args.json:
        print(json.dumps(result), file=out, flush=True)
    elif args.mode == "latency":
        print(f"{result['impl']} latency {args.frames} x {args.size} B: {result['round_trips_per_s']:.0f} "
              f"round trips/s, one-way p50 {result['latency_us_p50']:.1f} us, p99 {result['latency_us_p99']:.1f} us", file=out)
    else:
        print(f"{result['impl']} bandwidth {args.frames} x {args.size} B: {result['bandwidth_mbps']:.1f} MB/s", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
