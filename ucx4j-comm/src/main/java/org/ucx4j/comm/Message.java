package org.ucx4j.comm;

import java.lang.foreign.Arena;
import java.lang.ref.Cleaner;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.ucx4j.MemoryKind;

/**
 * A message: an ordered list of {@link Frame}s, sent and received whole.
 *
 * <p>Ownership: a message you build ({@link #of}) does not own its frames' memory and {@link #close()}
 * does nothing to it. A message you {@linkplain Comm#read() read} owns the memory its frames were
 * received into (allocated by the comm's {@link FrameAllocator}); {@link #close()} gives it back (the
 * built-in transports free a small or medium message's memory with the other messages sharing its
 * arena, and until then a frame used after close reads its own stale bytes, never another message's).
 * <b>Close every message you read</b>, or hand it to code that will. A received message dropped without
 * close is freed only after the garbage collector finds it unreachable, and a JVM whose heap stays
 * nearly empty (frames live off-heap) may collect seldom; so the memory that unclosed received messages
 * hold in one comm context is bounded by {@link CommKeys#MAX_UNCLOSED_BYTES} (default 1 GiB): above it
 * the context's comms stop receiving (the peers' data waits with them) and ask for a collection, and a
 * read that still waits after the comm's connect timeout fails with a {@link CommException} naming the
 * leak. Once freed, a dropped message's frame segments stop working ({@link IllegalStateException} on
 * access, never a crash): keep the message reachable while you use its frames.
 *
 * <p>Threading: the frame list is immutable; {@link #close()} is idempotent and safe from any thread,
 * but no thread may use the frames while another closes the message.
 */
public final class Message implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();

    private final List<Frame> frames;
    private final Cleaner.Cleanable cleanable;

    private Message(List<Frame> frames, Arena scope) {
        this.frames = frames;
        this.cleanable = scope == null ? null : CLEANER.register(this, new Release(scope));
    }

    /**
     * A message of the given frames (the list is copied; the memory is not).
     *
     * @param frames the frames, possibly none
     * @return the message; closing it frees nothing
     */
    public static Message of(List<Frame> frames) {
        return new Message(List.copyOf(frames), null);
    }

    /**
     * A message of the given frames.
     *
     * @param frames the frames, possibly none
     * @return the message; closing it frees nothing
     */
    public static Message of(Frame... frames) {
        return new Message(List.of(frames), null);
    }

    /**
     * A message of host frames over byte arrays (not copied).
     *
     * @param frames the byte arrays
     * @return the message
     */
    public static Message ofBytes(byte[]... frames) {
        Frame[] f = new Frame[frames.length];
        for (int i = 0; i < frames.length; i++) {
            f[i] = Frame.of(frames[i]);
        }
        return of(f);
    }

    /**
     * A received message whose frames live in {@code scope}; for transports.
     *
     * @param frames the received frames
     * @param scope the arena that owns their memory, closed by {@link #close()} or by the cleaner
     * @return the message
     */
    public static Message received(List<Frame> frames, Arena scope) {
        return new Message(List.copyOf(frames), Objects.requireNonNull(scope, "scope"));
    }

    /**
     * The frames, in order.
     *
     * @return an immutable list
     */
    public List<Frame> frames() {
        return frames;
    }

    /**
     * The number of frames.
     *
     * @return the count
     */
    public int frameCount() {
        return frames.size();
    }

    /**
     * One frame.
     *
     * @param index its position
     * @return the frame
     */
    public Frame frame(int index) {
        return frames.get(index);
    }

    /**
     * The total payload.
     *
     * @return the sum of the frames' sizes in bytes
     */
    public long byteSize() {
        long n = 0;
        for (Frame f : frames) {
            n += f.size();
        }
        return n;
    }

    /**
     * Whether this message owns its frames' memory (it was received).
     *
     * @return true for a received message
     */
    public boolean ownsMemory() {
        return cleanable != null;
    }

    /** Frees the memory of a received message (idempotent); does nothing for a message you built. */
    @Override
    public void close() {
        if (cleanable != null) {
            cleanable.clean();
        }
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("Message[");
        for (int i = 0; i < frames.size() && i < 8; i++) {
            if (i > 0) {
                b.append(", ");
            }
            Frame f = frames.get(i);
            b.append(f.size()).append(f.kind() == MemoryKind.HOST ? "" : " " + f.kind());
        }
        if (frames.size() > 8) {
            b.append(", ... ").append(frames.size()).append(" frames");
        }
        return b.append(']').toString();
    }

    /** Closes the scope once, from close() or from the cleaner; must not refer to the message. */
    private record Release(Arena scope, AtomicBoolean done) implements Runnable {
        Release(Arena scope) {
            this(scope, new AtomicBoolean());
        }

        @Override
        public void run() {
            if (done.compareAndSet(false, true)) {
                scope.close();
            }
        }
    }
}
