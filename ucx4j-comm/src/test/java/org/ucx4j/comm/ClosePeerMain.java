package org.ucx4j.comm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.RunningJvm;

/**
 * A raw comm peer in a JVM of its own for {@link CloseInEveryOrderTest}: it connects to the test's
 * listener, sends one command message that tells the test's handler what to do, and then plays its part:
 *
 * <ul>
 *   <li>{@code close-after URI SIZE N}: asks for a flood of SIZE-byte messages, reads N of them, stops
 *       reading and closes while more are in flight (rendezvous transfers pending on both sides), then
 *       prints {@code CLOSED <ms>} (how long its close took) and exits 0, or {@code FAILED <error>} and 3;
 *   <li>{@code hold URI SIZE}: asks for a flood, reads one message, prints {@code READY} and never
 *       reads again (until the test kills it);
 *   <li>{@code flood URI SIZE}: asks the handler to read, then writes SIZE-byte messages until killed,
 *       printing {@code READY} after the first.
 * </ul>
 */
public final class ClosePeerMain {
    private ClosePeerMain() {}

    /**
     * Starts a peer JVM.
     *
     * @param args the mode and its arguments (class Javadoc)
     * @return the running peer; close it to kill it
     */
    static RunningJvm start(String... args) {
        return ChildJvm.of(ClosePeerMain.class)
                .jvm("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
                .args(args)
                .start();
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        URI address = URI.create(args[1]);
        long size = Long.parseLong(args[2]);
        CommOptions options = CommOptions.builder()
                .config(org.ucx4j.UcxConfig.builder().build())
                .build();
        Comm c = Comms.connect(address, options);
        switch (mode) {
            case "close-after" -> {
                int n = Integer.parseInt(args[3]);
                c.write(command("flood " + size));
                for (int i = 0; i < n; i++) {
                    c.read(Duration.ofSeconds(60)).close();
                }
                long t0 = System.nanoTime();
                try {
                    c.close();
                } catch (RuntimeException e) {
                    System.out.println("FAILED " + e);
                    System.exit(3);
                }
                System.out.println("CLOSED " + (System.nanoTime() - t0) / 1_000_000);
                System.out.flush();
                System.exit(0);
            }
            case "hold" -> {
                c.write(command("flood " + size));
                c.read(Duration.ofSeconds(60)).close();
                System.out.println("READY");
                System.out.flush();
                new java.util.concurrent.CountDownLatch(1).await(); // until the test kills this JVM
            }
            case "flood" -> {
                c.write(command("sink"));
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment payload = arena.allocate(size);
                    c.write(Message.of(Frame.host(payload)));
                    System.out.println("READY");
                    System.out.flush();
                    while (true) {
                        c.write(Message.of(Frame.host(payload)));
                    }
                }
            }
            default -> throw new IllegalArgumentException("mode " + mode);
        }
    }

    static Message command(String text) {
        return Message.ofBytes(text.getBytes(StandardCharsets.UTF_8));
    }
}
