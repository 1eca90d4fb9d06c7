package org.ucx4j.comm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.Comms;
import org.ucx4j.comm.Message;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.Requirements;

/**
 * A JVM that exits right after its last comm closed (within the runtime's linger) closes the UCX runtime in
 * its shutdown hook rather than leaving the UCX context to the native teardown (where, with CUDA loaded, UCX's
 * cleanup runs after the driver's and logs an error); one still in use at exit is left alone and the JVM still
 * exits cleanly.
 */
class ExitClosesIdleRuntimesTest {
    private static final String CLOSED_LINE = "closed 1 unused UCX runtime(s) at JVM exit";

    @BeforeAll
    static void needsUcx() {
        Requirements.assumeUcx();
    }

    @Test
    void aRuntimeWhoseCommsClosedIsClosedAtExit() throws Exception {
        ChildJvm.Result r = child("close");
        assertEquals(0, r.exitCode(), r.all());
        assertTrue(r.output().contains("ECHOED"), r.all());
        assertTrue(r.output().contains(CLOSED_LINE), r.all());
    }

    @Test
    void aRuntimeStillInUseAtExitIsLeftAndTheJvmExits() throws Exception {
        ChildJvm.Result r = child("keep-open");
        assertEquals(0, r.exitCode(), r.all());
        assertTrue(r.output().contains("ECHOED"), r.all());
        assertFalse(r.output().contains("UCX runtime(s) at JVM exit"), r.all());
    }

    private static ChildJvm.Result child(String mode) throws Exception {
        return ChildJvm.of(ExitMain.class)
                .jvm(
                        "-Xmx256m",
                        "-XX:TieredStopAtLevel=1",
                        "-Dorg.slf4j.simpleLogger.log.org.ucx4j.comm.internal.UcxRuntimes=debug")
                .args(mode)
                .run(Duration.ofSeconds(60));
    }

    /** The child: one echoed message over {@code ucx://} on the shared context, then exit. */
    public static final class ExitMain {
        private ExitMain() {}

        /**
         * Runs the child.
         *
         * @param args {@code close} (close the comms and the listener, then return) or {@code keep-open}
         * @throws Exception when the exchange fails
         */
        public static void main(String[] args) throws Exception {
            CommOptions options = CommOptions.defaults();
            CommListener listener = Comms.listen(
                    URI.create("ucx://127.0.0.1:0"),
                    c -> {
                        try (c;
                                Message m = c.read()) {
                            c.write(m);
                        }
                    },
                    options);
            Comm comm = Comms.connect(listener.address(), options);
            comm.write(Message.ofBytes(new byte[] {1, 2, 3}));
            try (Message echo = comm.read()) {
                System.out.println(echo.frame(0).size() == 3 ? "ECHOED" : "WRONG " + echo);
            }
            if (args[0].equals("close")) {
                comm.close();
                listener.close();
            }
            System.out.flush();
        }
    }
}
