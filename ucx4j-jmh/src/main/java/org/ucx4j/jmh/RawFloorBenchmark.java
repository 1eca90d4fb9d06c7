package org.ucx4j.jmh;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.reflect.Field;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.ucx4j.ProgressMode;
import org.ucx4j.UcxEndpoint;
import org.ucx4j.UcxWorker;
import org.ucx4j.internal.NativeLinker;
import org.ucx4j.internal.Structs;
import org.ucx4j.internal.Ucp;
import org.ucx4j.internal.UcxLibrary;
import org.ucx4j.internal.worker.NativeWorker;

/**
 * The floor under {@link TagHotPathBenchmark#tagMessage}: the same 8-byte tag message between the same
 * two caller-mode workers, made with UCX's calls straight through FFM (no operation, future, table,
 * lock or upcall): receive posted with its info asked for at once, send with no callback, each request
 * polled with {@code ucp_request_check_status} / {@code ucp_tag_recv_request_test} while both workers
 * progress. What {@code tagMessage} costs above this is ucx4j's machinery; this itself is UCX plus the
 * downcalls.
 *
 * <p>It reaches the workers' handles by reflection: a measurement fixture, not an API.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class RawFloorBenchmark {
    private static final int RECV_INFO = 1 << 7;
    private static final int MEMORY_TYPE = 1 << 6;
    private static final int IN_PROGRESS = 1;

    private WorkerPair pair;
    private Arena arena;
    private MemorySegment serverWorker;
    private MemorySegment clientWorker;
    private MemorySegment endpoint;
    private long out;
    private long in;
    private MemorySegment sendParam;
    private MemorySegment recvParam;
    private MemorySegment info;
    private MethodHandle checkStatus;
    private MethodHandle recvTest;

    /** Connects the workers and fills the two parameter blocks once. */
    @Setup(Level.Trial)
    public void connect() throws Exception {
        pair = new WorkerPair(ProgressMode.CALLER, false);
        arena = Arena.ofShared();
        out = arena.allocate(8, 64).address();
        in = arena.allocate(8, 64).address();
        info = arena.allocate(Structs.UCP_TAG_RECV_INFO);
        serverWorker = handle(pair.server);
        clientWorker = handle(pair.client);
        Field h = UcxEndpoint.class.getDeclaredField("handle");
        h.setAccessible(true);
        endpoint = (MemorySegment) h.get(pair.endpoint);
        long mask = Structs.offset(Structs.UCP_REQUEST_PARAM, "op_attr_mask");
        long type = Structs.offset(Structs.UCP_REQUEST_PARAM, "memory_type");
        sendParam = arena.allocate(Structs.UCP_REQUEST_PARAM);
        sendParam.set(JAVA_INT, mask, MEMORY_TYPE);
        sendParam.set(JAVA_INT, type, 0);
        recvParam = arena.allocate(Structs.UCP_REQUEST_PARAM);
        recvParam.set(JAVA_INT, mask, MEMORY_TYPE | RECV_INFO);
        recvParam.set(JAVA_INT, type, 0);
        recvParam.set(ADDRESS, Structs.offset(Structs.UCP_REQUEST_PARAM, "recv_info"), info);
        var lib = UcxLibrary.require().lookup();
        checkStatus = NativeLinker.downcallWords(lib, "ucp_request_check_status", 1);
        recvTest = NativeLinker.downcallWords(lib, "ucp_tag_recv_request_test", 2);
    }

    private static MemorySegment handle(UcxWorker w) throws Exception {
        Field f = UcxWorker.class.getDeclaredField("rt");
        f.setAccessible(true);
        return ((NativeWorker) f.get(w)).handle;
    }

    /** Closes the workers, then the buffers. */
    @TearDown(Level.Trial)
    public void close() {
        pair.close();
        arena.close();
    }

    /** One tag message: receive posted, send, both workers progressed until both requests are done. */
    @Benchmark
    public long rawTagMessage() throws Throwable {
        long r = Ucp.tagRecvNbx(serverWorker, in, 8, 1, -1L, recvParam);
        long s = Ucp.tagSendNbx(endpoint, out, 8, 1, sendParam);
        checkPointer(r);
        checkPointer(s);
        while (s != 0) {
            int status = (byte) (long) checkStatus.invokeExact(s);
            if (status != IN_PROGRESS) {
                Ucp.requestFree(s);
                s = 0;
                break;
            }
            Ucp.workerProgress(clientWorker);
            Ucp.workerProgress(serverWorker);
        }
        while (r != 0) {
            int status = (byte) (long) recvTest.invokeExact(r, info.address());
            if (status != IN_PROGRESS) {
                Ucp.requestFree(r);
                r = 0;
                break;
            }
            Ucp.workerProgress(clientWorker);
            Ucp.workerProgress(serverWorker);
        }
        return info.get(JAVA_LONG, 8);
    }

    private static void checkPointer(long p) {
        if (Long.compareUnsigned(p, -100L) >= 0) {
            throw new IllegalStateException("UCX status " + p);
        }
    }
}
