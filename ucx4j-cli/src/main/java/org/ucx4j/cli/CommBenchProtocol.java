package org.ucx4j.cli;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.ucx4j.comm.Frame;
import org.ucx4j.comm.Message;

/**
 * The protocol of {@code ucx4j bench --comm} over one comm, in whole messages.
 *
 * <p>The client sends a control message (one frame of {@value #CONTROL_SIZE} bytes, little-endian: magic
 * {@code int}, version {@code int}, kind {@code int} (0 bye, 1 run), mode {@code int} (latency 0,
 * bandwidth 1), frames {@code int}, window {@code int}, size {@code long}, iterations {@code long},
 * warm-up {@code long}); the server checks it and answers with a reply. Latency: the client writes a
 * message of {@code frames} frames of {@code size} bytes, the server writes the received message back,
 * warm-up and measured round trips alike. Bandwidth, per phase (warm-up if any, then measured): the
 * client writes the phase's messages, the server reads them all and replies (the end of the timed part),
 * then checks the first and last message's bytes and replies again with its verdict. After a bye the
 * client closes the comm.
 *
 * <p>A reply is one frame: a status byte (1 ok, 0 failed), then a UTF-8 text saying what failed.
 */
final class CommBenchProtocol {
    private CommBenchProtocol() {}

    static final int CONTROL_SIZE = 48;
    private static final int MAGIC = 0x55434A43; // "UCJC"
    private static final int VERSION = 1;
    private static final int KIND_BYE = 0;
    private static final int KIND_RUN = 1;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** A control message for a run, or a bye when {@code run} is null. */
    static Message control(CommBenchSettings run) {
        byte[] b = new byte[CONTROL_SIZE];
        MemorySegment m = MemorySegment.ofArray(b);
        m.set(INT, 0, MAGIC);
        m.set(INT, 4, VERSION);
        if (run == null) {
            m.set(INT, 8, KIND_BYE);
            return Message.ofBytes(b);
        }
        m.set(INT, 8, KIND_RUN);
        m.set(INT, 12, run.mode() == BenchMode.LATENCY ? 0 : 1);
        m.set(INT, 16, run.frames());
        m.set(INT, 20, run.window());
        m.set(LONG, 24, run.size());
        m.set(LONG, 32, run.iterations());
        m.set(LONG, 40, run.warmup());
        return Message.ofBytes(b);
    }

    /**
     * Reads a control message.
     *
     * @return the run asked for, or null for bye
     * @throws IllegalArgumentException when the message is not ours or out of bounds
     */
    static CommBenchSettings readControl(Message msg) {
        if (msg.frameCount() != 1 || msg.frame(0).size() != CONTROL_SIZE) {
            throw new IllegalArgumentException("not a ucx4j bench --comm control message: " + msg);
        }
        MemorySegment m = msg.frame(0).segment();
        if (m.get(INT, 0) != MAGIC) {
            throw new IllegalArgumentException(
                    "not a ucx4j bench --comm control message (magic " + Integer.toHexString(m.get(INT, 0)) + ")");
        }
        if (m.get(INT, 4) != VERSION) {
            throw new IllegalArgumentException(
                    "bench --comm protocol version " + m.get(INT, 4) + ", expected " + VERSION);
        }
        int kind = m.get(INT, 8);
        if (kind == KIND_BYE) {
            return null;
        }
        if (kind != KIND_RUN) {
            throw new IllegalArgumentException("unknown bench --comm control kind " + kind);
        }
        int mode = m.get(INT, 12);
        if (mode != 0 && mode != 1) {
            throw new IllegalArgumentException("unknown bench --comm mode " + mode);
        }
        return new CommBenchSettings(
                mode == 0 ? BenchMode.LATENCY : BenchMode.BANDWIDTH,
                m.get(INT, 16),
                m.get(LONG, 24),
                m.get(LONG, 32),
                m.get(LONG, 40),
                m.get(INT, 20));
    }

    /** A reply: ok, or failed with what went wrong. */
    static Message reply(boolean ok, String detail) {
        byte[] text = detail == null ? new byte[0] : detail.getBytes(StandardCharsets.UTF_8);
        byte[] b = new byte[1 + text.length];
        b[0] = (byte) (ok ? 1 : 0);
        System.arraycopy(text, 0, b, 1, text.length);
        return Message.ofBytes(b);
    }

    /**
     * Checks a reply and frees it.
     *
     * @param reply the message read
     * @param what what it answers, for the error
     * @throws IllegalStateException when the server reported a failure or the reply is malformed
     */
    static void expectOk(Message reply, String what) {
        try (reply) {
            if (reply.frameCount() != 1 || reply.frame(0).size() < 1) {
                throw new IllegalStateException("the server's reply to " + what + " is malformed: " + reply);
            }
            byte[] b = reply.frame(0).toByteArray();
            if (b[0] != 1) {
                throw new IllegalStateException(
                        "the server refused " + what + ": " + new String(b, 1, b.length - 1, StandardCharsets.UTF_8));
            }
        }
    }

    /** The pattern seed of frame {@code i} of every data message. */
    static long seed(int frame) {
        return 101 + frame;
    }

    /**
     * Checks that a data message has the run's shape.
     *
     * @throws IllegalStateException naming what differs
     */
    static void checkShape(Message m, CommBenchSettings run, String what) {
        if (m.frameCount() != run.frames()) {
            throw new IllegalStateException(what + " has " + m.frameCount() + " frames, expected " + run.frames());
        }
        for (int i = 0; i < m.frameCount(); i++) {
            if (m.frame(i).size() != run.size()) {
                throw new IllegalStateException(
                        what + ": frame " + i + " has " + m.frame(i).size() + " bytes, expected " + run.size());
            }
        }
    }

    /**
     * Checks that a data message holds the pattern in every frame.
     *
     * @throws IllegalStateException naming the frame and offset that differ
     */
    static void verify(Message m, CommBenchSettings run, String what) {
        checkShape(m, run, what);
        int i = 0;
        for (Frame f : m.frames()) {
            BenchMemory.current().verify(f.segment(), seed(i), what + ", frame " + i);
            i++;
        }
    }
}
