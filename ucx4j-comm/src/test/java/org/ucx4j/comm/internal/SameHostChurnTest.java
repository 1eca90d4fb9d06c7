package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.net.URI;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.ucx4j.UcxConfig;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommContext;
import org.ucx4j.comm.CommKeys;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Message;
import org.ucx4j.testsupport.Requirements;

/**
 * Same-host workers come and go (a comm context per round connects on shared memory, then closes) while
 * tcp comms on the shared worker come and go beside them, in one process. UCX up to 1.16 aborts a process
 * whose workers' async contexts see each other's reused socket numbers (see {@link UcxRuntime}); same-host
 * workers keep to transports without UCX sockets, so this must run to the end on every UCX version.
 * {@code -Ducx4jtest.same-host-churn.rounds=N} for more rounds than CI's.
 */
@Tag("native")
class SameHostChurnTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @BeforeAll
    static void needs() {
        Requirements.assumeUcx();
        assumeTrue(SameHost.host().isPresent(), "no /proc here: same-host workers are off");
    }

    @Test
    void sameHostWorkersAndTcpCommsChurnTogether() throws Exception {
        int rounds = Integer.getInteger("ucx4jtest.same-host-churn.rounds", 20);
        CommOptions tcpOnShared = CommOptions.builder()
                .config(UcxConfig.builder()
                        .set(CommKeys.SAME_HOST_SHARED_MEMORY, false)
                        .build())
                .build();
        BlockingQueue<Comm> accepted = new LinkedBlockingQueue<>();
        try (CommContext a = CommContext.create();
                CommListener l = a.listen(URI.create("ucx://127.0.0.1:0"), accepted::add, CommOptions.defaults())) {
            assumeTrue(((UcxTransport.Listener) l).offersSameHost(), "no shared memory transport here");
            int sameHost = 0;
            for (int i = 0; i < rounds; i++) {
                try (CommContext b = CommContext.create()) {
                    // One at a time, so that the comm accepted next is this one's peer.
                    for (CommOptions options : new CommOptions[] {CommOptions.defaults(), tcpOnShared}) {
                        try (Comm c = b.connectAsync(l.address(), options).get(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                            sameHost += ((UcxComm) c).runtime().key.isSameHost() ? 1 : 0;
                            Comm s = accepted.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
                            assertTrue(s != null, "round " + i + ": accepted");
                            try (s) {
                                byte[] payload = {(byte) i, 2, 3};
                                c.write(Message.ofBytes(payload));
                                try (Message m = s.read(WAIT)) {
                                    assertArrayEquals(payload, m.frame(0).toByteArray());
                                }
                            }
                        }
                    }
                }
            }
            assertTrue(sameHost == rounds, sameHost + " of " + rounds + " rounds on same-host workers");
        }
    }
}
