package org.ucx4j.comm;

import java.net.URI;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.RunningJvm;

/**
 * A comm peer in a JVM of its own, for tests that kill it: {@code listen URI} prints {@code ADDRESS <uri>}
 * and echoes every message of every client; {@code connect URI} connects, writes one message and then
 * echoes until killed.
 */
public final class CommPeerMain {
    private CommPeerMain() {}

    /**
     * Starts a comm peer JVM.
     *
     * @param args {@code listen URI} or {@code connect URI}
     * @return the running peer; close it to kill it
     */
    static RunningJvm start(String... args) {
        return ChildJvm.of(CommPeerMain.class)
                .jvm("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
                .args(args)
                .start();
    }

    public static void main(String[] args) throws Exception {
        CommOptions options = CommOptions.builder()
                .config(org.ucx4j.UcxConfig.builder().build())
                .build();
        if (args[0].equals("listen")) {
            CommListener l = Comms.listen(URI.create(args[1]), CommPeerMain::echo, options);
            System.out.println("ADDRESS " + l.address());
            System.out.flush();
            new java.util.concurrent.CountDownLatch(1).await(); // until the test kills this JVM
        } else {
            Comm c = Comms.connect(URI.create(args[1]), options);
            c.write(Message.ofBytes("hello".getBytes()));
            echo(c);
        }
    }

    private static void echo(Comm comm) {
        try (comm) {
            while (true) {
                try (Message m = comm.read()) {
                    comm.write(m);
                }
            }
        } catch (CommClosedException e) {
            // the client left
        }
    }
}
