package org.ucx4j.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ucx4j.testsupport.Requirements;

/** A CommContext owns what its comms share: closing it releases that, without waiting for time to pass. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CommContextTest {
    @Test
    void inprocNamesBelongToTheirContext() throws Exception {
        try (CommContext a = CommContext.create();
                CommContext b = CommContext.create();
                CommListener l = a.listen(
                        URI.create("inproc://context-test"), CommConformanceTest::echo, CommOptions.defaults())) {
            assertThrows(CommException.class, () -> b.connect(l.address(), CommOptions.defaults()));
            try (CommListener same =
                    b.listen(URI.create("inproc://context-test"), Comm::close, CommOptions.defaults())) {
                assertFalse(same.address().toString().isEmpty(), "the name is free in another context");
            }
            try (Comm c = a.connect(l.address(), CommOptions.defaults())) {
                c.write(Message.ofBytes(new byte[] {42}));
                try (Message echoed = c.read(Duration.ofSeconds(10))) {
                    assertEquals(1, echoed.byteSize());
                }
            }
        }
    }

    @Test
    void aClosedContextRefusesNewWork() {
        CommContext ctx = CommContext.create();
        ctx.close();
        ctx.close(); // idempotent
        assertTrue(ctx.isClosed());
        assertThrows(
                IllegalStateException.class,
                () -> ctx.listen(URI.create("tcp://127.0.0.1:0"), Comm::close, CommOptions.defaults()));
        assertThrows(
                IllegalStateException.class,
                () -> ctx.connect(URI.create("tcp://127.0.0.1:1"), CommOptions.defaults()));
        assertFalse(CommContext.shared().isClosed(), "the shared context is another one");
    }

    @Tag("native")
    @Test
    void closingTheContextEndsItsUcxWorkerAndClosedCommsLingers() throws Exception {
        Requirements.assumeUcx();
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        CommContext ctx = CommContext.create();
        CommListener l = ctx.listen(URI.create("ucx://127.0.0.1:0"), CommConformanceTest::echo, CommOptions.defaults());
        List<Thread> progress = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> !before.contains(t)
                        && t.getName().startsWith("ucx4j-comm")
                        && t.getName().endsWith("-progress"))
                .toList();
        assertFalse(progress.isEmpty(), "the context's UCX worker has a progress thread");
        try (Comm c = ctx.connect(l.address(), CommOptions.defaults())) {
            c.write(Message.ofBytes(new byte[] {42}));
            c.read(Duration.ofSeconds(10)).close();
        } // a closed ucx:// comm keeps its endpoint until the peer hangs up (up to 30 s)
        l.close();
        ctx.close(); // ends that linger, and the worker with the last user
        for (Thread t : progress) {
            t.join(Duration.ofSeconds(20)); // a condition (the thread ended), with a deadline below the linger
        }
        assertTrue(progress.stream().noneMatch(Thread::isAlive), "the worker's progress thread ended");
    }
}
