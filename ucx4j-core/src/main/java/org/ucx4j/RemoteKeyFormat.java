package org.ucx4j;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * The serialized form of a remote key, version 1: what {@link MemoryRegion#packRemoteKey()} writes and
 * {@link UcxEndpoint#unpackRemoteKey(byte[])} reads. All integers little-endian.
 *
 * <pre>
 * offset size  field
 *      0    5  magic "UCXRK" (ASCII)
 *      5    1  version (1)
 *      6    8  base address of the region in the owner's address space (u64)
 *     14    8  length of the region in bytes (u64, at most 2^63 - 1)
 *     22    4  length n of the packed UCX key (u32, at least 1)
 *     26    4  CRC-32C of bytes 0..25 followed by the packed key (u32)
 *     30    n  the key as {@code ucp_rkey_pack} packed it; n must equal the bytes that remain
 * </pre>
 *
 * <p>Why our own frame around UCX's bytes: the peer needs the base address to address the region, and
 * UCX's packed key says nothing about where it ends or what version wrote it. Parsing checks every
 * field before any native call, so a truncated or corrupted frame is an {@link IllegalArgumentException}
 * naming the problem.
 *
 * <p>Why a checksum: UCX's packed key has none, and {@code ucp_ep_rkey_unpack} cannot be trusted with
 * damaged input. UCX 1.13 was seen to crash the process (SIGSEGV in {@code uct_rkey_release}, on the
 * error path of {@code ucp_ep_rkey_unpack}, which releases transport keys it never unpacked) for a key
 * with one byte flipped; a flip it does not notice would address the wrong memory. The CRC keeps
 * accidental damage away from UCX. It is not authentication: UCX has none, and a peer that can send
 * keys can already read and write the memory they describe.
 */
final class RemoteKeyFormat {
    static final byte[] MAGIC = "UCXRK".getBytes(StandardCharsets.US_ASCII);
    static final byte VERSION = 1;
    /** Bytes before the CRC, which it covers together with the packed key. */
    private static final int CHECKED_HEADER = MAGIC.length + 1 + 8 + 8 + 4;

    static final int HEADER_SIZE = CHECKED_HEADER + 4;

    private RemoteKeyFormat() {}

    /** A parsed frame. */
    record Parsed(long base, long length, byte[] packedKey) {}

    static byte[] encode(long base, long length, byte[] packedKey) {
        if (packedKey.length == 0) {
            throw new IllegalArgumentException("UCX packed an empty remote key");
        }
        ByteBuffer b = ByteBuffer.allocate(HEADER_SIZE + packedKey.length).order(ByteOrder.LITTLE_ENDIAN);
        b.put(MAGIC)
                .put(VERSION)
                .putLong(base)
                .putLong(length)
                .putInt(packedKey.length)
                .putInt(0)
                .put(packedKey);
        byte[] frame = b.array();
        b.putInt(CHECKED_HEADER, crc(frame));
        return frame;
    }

    private static int crc(byte[] frame) {
        CRC32C crc = new CRC32C();
        crc.update(frame, 0, CHECKED_HEADER);
        crc.update(frame, HEADER_SIZE, frame.length - HEADER_SIZE);
        return (int) crc.getValue();
    }

    static Parsed decode(byte[] bytes) {
        if (bytes == null) {
            throw new NullPointerException("remote key bytes");
        }
        if (bytes.length < HEADER_SIZE) {
            throw new IllegalArgumentException("remote key truncated: " + bytes.length
                    + " bytes, but the header alone is " + HEADER_SIZE + " bytes");
        }
        if (!Arrays.equals(bytes, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw new IllegalArgumentException("not a ucx4j remote key: the first 5 bytes are not \"UCXRK\"");
        }
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).position(MAGIC.length);
        int version = b.get() & 0xFF;
        if (version != VERSION) {
            throw new IllegalArgumentException(
                    "unsupported remote key version " + version + " (this ucx4j reads " + VERSION + ")");
        }
        long base = b.getLong();
        long length = b.getLong();
        long keyLength = b.getInt() & 0xFFFF_FFFFL;
        int storedCrc = b.getInt();
        if (keyLength == 0) {
            throw new IllegalArgumentException("remote key corrupted: the packed UCX key is empty");
        }
        int remaining = bytes.length - HEADER_SIZE;
        if (keyLength != remaining) {
            throw new IllegalArgumentException("remote key " + (keyLength > remaining ? "truncated" : "corrupted")
                    + ": the header says the packed UCX key has " + keyLength + " bytes, but " + remaining
                    + " bytes follow the header");
        }
        int actualCrc = crc(bytes);
        if (storedCrc != actualCrc) {
            throw new IllegalArgumentException("remote key corrupted: checksum mismatch (CRC-32C 0x"
                    + Integer.toHexString(actualCrc) + ", the key says 0x" + Integer.toHexString(storedCrc)
                    + "); it was not passed to UCX");
        }
        if (length < 0) {
            throw new IllegalArgumentException("remote key corrupted: region length " + Long.toUnsignedString(length)
                    + " is larger than 2^63 - 1");
        }
        if (Long.compareUnsigned(base + length, base) < 0) {
            throw new IllegalArgumentException("remote key corrupted: base 0x" + Long.toHexString(base) + " + length "
                    + length + " overflows the address space");
        }
        return new Parsed(base, length, Arrays.copyOfRange(bytes, HEADER_SIZE, bytes.length));
    }
}
