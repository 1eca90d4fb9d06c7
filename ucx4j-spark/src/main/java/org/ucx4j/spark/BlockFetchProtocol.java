package org.ucx4j.spark;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.ucx4j.comm.CommProtocolException;

/**
 * The shuffle fetch protocol carried in ucx4j comm messages, both directions, big-endian.
 *
 * <p>A request is one frame: {@code int magic, byte version, int count}, then {@code count} block ids as
 * modified UTF-8 ({@link DataOutputStream#writeUTF}). A reply is a header frame followed by one frame per
 * block served, in request order: {@code int magic, byte version, int count}, then per block a status
 * byte and either the block's size ({@link #OK}) or an error message ({@link #ERROR}). A reply whose frames
 * do not match its header (missing, extra or of another size: a truncated block) is a protocol error.
 * Counts are bounded ({@link #MAX_BLOCKS}) so that a hostile peer cannot make us allocate what it claims.
 *
 * <p>Threading: stateless.
 */
final class BlockFetchProtocol {
    /** "UCXS". */
    static final int MAGIC = 0x55435853;

    static final byte VERSION = 1;
    /** Most block ids one request may carry (Spark's requests hold far fewer). */
    static final int MAX_BLOCKS = 65_536;
    /**
     * The largest request frame a server reads: {@link #MAX_BLOCKS} ids of up to 125 bytes each (Spark's
     * shuffle block ids are under 64). A larger frame is not decoded: it would only cost the server's heap.
     */
    static final long MAX_REQUEST_BYTES = 8L << 20;

    static final byte OK = 0;
    static final byte ERROR = 1;

    /** One block's entry in a reply header. */
    record Entry(byte status, long size, String error) {}

    private BlockFetchProtocol() {}

    static byte[] encodeRequest(String[] blockIds) {
        return write(out -> {
            out.writeInt(blockIds.length);
            for (String id : blockIds) {
                out.writeUTF(id);
            }
        });
    }

    static List<String> decodeRequest(byte[] frame) {
        try (DataInputStream in = open(frame)) {
            int count = readCount(in);
            List<String> ids = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                ids.add(in.readUTF());
            }
            requireEnd(in);
            return ids;
        } catch (IOException e) {
            throw new CommProtocolException("malformed shuffle fetch request: " + e.getMessage(), e);
        }
    }

    static byte[] encodeReply(List<Entry> entries) {
        return write(out -> {
            out.writeInt(entries.size());
            for (Entry e : entries) {
                out.writeByte(e.status());
                if (e.status() == OK) {
                    out.writeLong(e.size());
                } else {
                    String msg = e.error();
                    // writeUTF refuses more than 65535 bytes of modified UTF-8.
                    out.writeUTF(msg.length() > 8192 ? msg.substring(0, 8192) + "..." : msg);
                }
            }
        });
    }

    static List<Entry> decodeReply(byte[] frame, int expectedCount) {
        try (DataInputStream in = open(frame)) {
            int count = readCount(in);
            if (count != expectedCount) {
                throw new CommProtocolException(
                        "shuffle fetch reply has " + count + " blocks, the request asked for " + expectedCount);
            }
            List<Entry> entries = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                byte status = in.readByte();
                if (status == OK) {
                    long size = in.readLong();
                    if (size < 0) {
                        throw new CommProtocolException("shuffle fetch reply: negative block size " + size);
                    }
                    entries.add(new Entry(OK, size, null));
                } else if (status == ERROR) {
                    entries.add(new Entry(ERROR, 0, in.readUTF()));
                } else {
                    throw new CommProtocolException("shuffle fetch reply: unknown status " + status);
                }
            }
            requireEnd(in);
            return entries;
        } catch (IOException e) {
            throw new CommProtocolException("malformed shuffle fetch reply: " + e.getMessage(), e);
        }
    }

    private interface Body {
        void write(DataOutputStream out) throws IOException;
    }

    private static byte[] write(Body body) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(MAGIC);
            out.writeByte(VERSION);
            body.write(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    private static DataInputStream open(byte[] frame) throws IOException {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(frame));
        int magic = in.readInt();
        if (magic != MAGIC) {
            throw new CommProtocolException("not a ucx4j shuffle message (magic 0x" + Integer.toHexString(magic) + ")");
        }
        byte version = in.readByte();
        if (version != VERSION) {
            throw new CommProtocolException("ucx4j shuffle protocol version " + version
                    + " is not supported (this side speaks " + VERSION + ")");
        }
        return in;
    }

    private static int readCount(DataInputStream in) throws IOException {
        int count = in.readInt();
        if (count < 0 || count > MAX_BLOCKS) {
            throw new CommProtocolException("block count " + count + " is outside 0.." + MAX_BLOCKS);
        }
        return count;
    }

    private static void requireEnd(DataInputStream in) throws IOException {
        if (in.read() != -1) {
            throw new CommProtocolException("trailing bytes after the shuffle message");
        }
    }
}
