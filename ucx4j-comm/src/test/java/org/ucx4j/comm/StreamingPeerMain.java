package org.ucx4j.comm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import org.ucx4j.testsupport.ChildJvm;
import org.ucx4j.testsupport.RunningJvm;

/**
 * A comm peer in a JVM of its own that streams until it is killed, for the dead-peer tests: {@code send URI
 * SIZE} connects and writes messages of SIZE bytes without end; {@code receive URI} connects and reads
 * (and closes) every message without end. Either prints {@code CONNECTED} once its comm is up.
 */
public final class StreamingPeerMain {
    private StreamingPeerMain() {}

    /**
     * Starts a streaming peer JVM.
     *
     * @param env extra environment variables as {@code NAME=value}, then the arguments of {@link #main}
     * @return the running peer; close it to kill it
     */
    static RunningJvm start(java.util.Map<String, String> env, String... args) {
        return ChildJvm.of(StreamingPeerMain.class)
                .jvm("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
                .env(env)
                .args(args)
                .start();
    }

    public static void main(String[] args) throws Exception {
        Comm c = Comms.connect(URI.create(args[1]));
        System.out.println("CONNECTED");
        System.out.flush();
        if (args[0].equals("send")) {
            long size = Long.parseLong(args[2]);
            MemorySegment payload = Arena.global().allocate(size, 64);
            Message m = Message.of(Frame.host(payload));
            while (true) {
                c.write(m);
            }
        } else {
            while (true) {
                c.read().close();
            }
        }
    }
}
