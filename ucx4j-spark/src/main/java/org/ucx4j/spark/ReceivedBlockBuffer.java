package org.ucx4j.spark;

import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.ucx4j.comm.Message;

/**
 * A fetched block handed to Spark: a view of one frame of a received reply, used in place (no copy).
 *
 * <p>Ownership: reference counted as Spark expects ({@link #retain()}, {@link #release()}); it starts with
 * one reference, held by the fetcher until the listener has taken its own. The reply's memory returns to
 * ucx4j's pool when the last block of the reply is released. Using a released buffer is an
 * {@link IllegalStateException}.
 *
 * <p>Threading: the counts are atomic; reading the bytes from several threads at once is safe but Spark
 * does not do it.
 */
final class ReceivedBlockBuffer extends ManagedBuffer {
    /** The reply whose frames the blocks view; closed when every block is released. */
    static final class SharedReply {
        private final Message message;
        private final AtomicInteger references;

        SharedReply(Message message, int blocks) {
            this.message = message;
            this.references = new AtomicInteger(blocks);
        }

        void release() {
            if (references.decrementAndGet() == 0) {
                message.close();
            }
        }
    }

    private final SharedReply reply;
    private final MemorySegment bytes;
    private final AtomicInteger references = new AtomicInteger(1);

    ReceivedBlockBuffer(SharedReply reply, MemorySegment bytes) {
        this.reply = reply;
        this.bytes = bytes;
    }

    @Override
    public long size() {
        return bytes.byteSize();
    }

    @Override
    public ByteBuffer nioByteBuffer() {
        checkLive();
        if (bytes.byteSize() > Integer.MAX_VALUE) {
            throw new UnsupportedOperationException(
                    "a block of " + bytes.byteSize() + " bytes does not fit a ByteBuffer: read it as a stream");
        }
        return bytes.asByteBuffer().asReadOnlyBuffer();
    }

    @Override
    public InputStream createInputStream() {
        checkLive();
        return new SegmentInputStream();
    }

    @Override
    public ManagedBuffer retain() {
        if (references.getAndUpdate(n -> n == 0 ? 0 : n + 1) == 0) {
            throw new IllegalStateException("this shuffle block's buffer was already released");
        }
        return this;
    }

    @Override
    public ManagedBuffer release() {
        int left = references.updateAndGet(n -> n == 0 ? -1 : n - 1);
        if (left < 0) {
            references.set(0);
            throw new IllegalStateException("this shuffle block's buffer was already released");
        }
        if (left == 0) {
            reply.release();
        }
        return this;
    }

    @Override
    public Object convertToNetty() {
        throw new UnsupportedOperationException("a block fetched over ucx4j is not sent on over Netty");
    }

    @Override
    public Object convertToNettyForSsl() {
        throw new UnsupportedOperationException("a block fetched over ucx4j is not sent on over Netty");
    }

    private void checkLive() {
        if (references.get() <= 0) {
            throw new IllegalStateException("this shuffle block's buffer was already released");
        }
    }

    @Override
    public String toString() {
        return "ReceivedBlockBuffer[" + bytes.byteSize() + " bytes]";
    }

    /** Reads the segment from a position, any size (also past 2 GiB). */
    private final class SegmentInputStream extends InputStream {
        private long position;
        private long mark;

        @Override
        public int read() {
            if (position >= bytes.byteSize()) {
                return -1;
            }
            checkLive();
            return Byte.toUnsignedInt(bytes.get(ValueLayout.JAVA_BYTE, position++));
        }

        @Override
        public int read(byte[] b, int off, int len) {
            java.util.Objects.checkFromIndexSize(off, len, b.length);
            if (len == 0) {
                return 0;
            }
            long left = bytes.byteSize() - position;
            if (left <= 0) {
                return -1;
            }
            checkLive();
            int n = (int) Math.min(len, left);
            MemorySegment.copy(bytes, ValueLayout.JAVA_BYTE, position, b, off, n);
            position += n;
            return n;
        }

        @Override
        public long skip(long n) {
            long skipped = Math.max(0, Math.min(n, bytes.byteSize() - position));
            position += skipped;
            return skipped;
        }

        @Override
        public int available() {
            return (int) Math.min(Integer.MAX_VALUE, bytes.byteSize() - position);
        }

        @Override
        public boolean markSupported() {
            return true;
        }

        @Override
        public synchronized void mark(int readLimit) {
            mark = position;
        }

        @Override
        public synchronized void reset() {
            position = mark;
        }
    }
}
