package org.ucx4j.comm.internal;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.ucx4j.comm.CommAuthenticationException;
import org.ucx4j.comm.CommException;
import org.ucx4j.comm.CommOptions;
import org.ucx4j.comm.CommProtocolException;

/**
 * The connection handshake of docs/WIRE.md: protocol version check, identities, the addresses each
 * side sees, each side's receive tag (ucx), and, when a shared secret is configured, an HMAC-SHA256
 * challenge and response in both directions. The listener proves first; the client answers only a
 * listener that proved the same secret, and the listener refuses a wrong or missing proof before any
 * message is delivered.
 *
 * <pre>
 * client -> listener   HELLO   (version, auth flag, nonce C, tag, identity, address used, worker address)
 * listener -> client   HELLO   (version, auth flag, nonce L, tag, identity, client address seen)
 *                      PROOF   HMAC(secret, "ucx4j-comm/1 listener" | C | L)   (empty without a secret)
 * client -> listener   PROOF   HMAC(secret, "ucx4j-comm/1 client" | L | C)
 * listener -> client   VERDICT (0 accepted | 1 version | 2 authentication | 3 other, reason)
 * </pre>
 * A listener that refuses at any step sends a VERDICT instead of its next record.
 */
final class Handshake {
    /** "U4JH". */
    static final int MAGIC = 0x484A3455;

    static final int VERSION = 1;
    static final int HELLO = 1;
    static final int PROOF = 2;
    static final int VERDICT = 3;
    static final int FLAG_AUTH = 1;
    static final int NONCE_BYTES = 32;
    static final int MAC_BYTES = 32;

    /** The listener's answer in a VERDICT record, with its wire code. */
    enum Verdict {
        ACCEPTED(0),
        REFUSED_VERSION(1),
        REFUSED_AUTH(2),
        REFUSED_OTHER(3);

        final int code;

        Verdict(int code) {
            this.code = code;
        }

        /** The verdict of a wire code; codes this side does not know read as {@link #REFUSED_OTHER}. */
        static Verdict of(int code) {
            for (Verdict v : values()) {
                if (v.code == code) {
                    return v;
                }
            }
            return REFUSED_OTHER;
        }
    }

    private static final SecureRandom RANDOM = new SecureRandom();

    private Handshake() {}

    /** What a HELLO says. */
    record Hello(
            int version, boolean auth, byte[] nonce, long tag, String identity, String address, byte[] workerAddress) {}

    /** What the handshake established about the peer. */
    record Result(String peerIdentity, long peerTag, String addressSeenByPeer, byte[] peerWorkerAddress) {}

    // ------------------------------------------------------------------ the two sides

    static Result client(
            HandshakeChannel ch, CommOptions options, long myTag, String addressUsed, byte[] myWorkerAddress)
            throws Exception {
        Optional<byte[]> secret = options.secret();
        byte[] nonceC = nonce();
        ch.send(hello(secret.isPresent(), nonceC, myTag, options.identity(), addressUsed, myWorkerAddress));
        byte[] r = ch.receive();
        Hello h = parseHelloOrVerdict(r, "listener");
        if (h.auth() != secret.isPresent()) {
            throw new CommAuthenticationException(
                    secret.isPresent()
                            ? "the listener has no shared secret but this side has one (auth.secret): refusing an unauthenticated peer"
                            : "the listener requires a shared secret: set auth.secret or auth.secret-file");
        }
        byte[] proofL = parseProof(ch.receive(), secret.isPresent());
        if (secret.isPresent()) {
            byte[] expected = mac(secret.get(), "ucx4j-comm/1 listener", nonceC, h.nonce());
            if (!MessageDigest.isEqual(expected, proofL)) {
                throw new CommAuthenticationException("the listener proved a different shared secret (auth.secret)");
            }
            ch.send(proof(mac(secret.get(), "ucx4j-comm/1 client", h.nonce(), nonceC)));
        } else {
            ch.send(proof(new byte[0]));
        }
        parseVerdict(ch.receive(), "listener");
        return new Result(h.identity(), h.tag(), h.address(), h.workerAddress());
    }

    /**
     * The listener's side. {@code firstHello} is the client's HELLO when the transport already read it
     * (ucx-worker), else null.
     */
    static Result listener(
            HandshakeChannel ch, CommOptions options, long myTag, String clientAddressSeen, byte[] firstHello)
            throws Exception {
        Optional<byte[]> secret = options.secret();
        byte[] helloRecord;
        try {
            helloRecord = firstHello != null ? firstHello : ch.receive();
        } catch (CommProtocolException e) { // e.g. a record length out of bounds: refused like a bad HELLO
            refuse(ch, Verdict.REFUSED_OTHER, e.getMessage());
            throw e;
        }
        Hello c;
        try {
            c = parseHello(helloRecord);
        } catch (CommProtocolException e) {
            refuse(
                    ch,
                    speaksOtherVersion(helloRecord) ? Verdict.REFUSED_VERSION : Verdict.REFUSED_OTHER,
                    e.getMessage());
            throw e;
        }
        if (c.auth() != secret.isPresent()) {
            String why = secret.isPresent()
                    ? "this listener requires a shared secret and the client has none"
                    : "the client has a shared secret but this listener has none";
            refuse(ch, Verdict.REFUSED_AUTH, why);
            throw new CommAuthenticationException(why + " (client " + c.identity() + ")");
        }
        byte[] nonceL = nonce();
        ch.send(hello(secret.isPresent(), nonceL, myTag, options.identity(), clientAddressSeen, null));
        ch.send(proof(
                secret.isPresent() ? mac(secret.get(), "ucx4j-comm/1 listener", c.nonce(), nonceL) : new byte[0]));
        byte[] proofC;
        try {
            proofC = parseProof(ch.receive(), secret.isPresent());
        } catch (CommAuthenticationException e) { // a proof of the wrong length: says lengths, nothing secret
            refuse(ch, Verdict.REFUSED_AUTH, e.getMessage());
            throw e;
        } catch (CommProtocolException e) { // not a PROOF record, or out of bounds
            refuse(ch, Verdict.REFUSED_OTHER, e.getMessage());
            throw e;
        }
        if (secret.isPresent()) {
            byte[] expected = mac(secret.get(), "ucx4j-comm/1 client", nonceL, c.nonce());
            if (!MessageDigest.isEqual(expected, proofC)) {
                refuse(ch, Verdict.REFUSED_AUTH, "wrong shared secret");
                throw new CommAuthenticationException("client " + c.identity() + " proved a wrong shared secret");
            }
        }
        ch.send(verdict(Verdict.ACCEPTED, ""));
        return new Result(c.identity(), c.tag(), c.address(), c.workerAddress());
    }

    private static void refuse(HandshakeChannel ch, Verdict verdict, String reason) {
        try {
            ch.send(verdict(verdict, reason));
        } catch (Exception ignored) {
            // The refusal is a courtesy; the connection is dropped either way.
        }
    }

    // ------------------------------------------------------------------ records

    static byte[] hello(boolean auth, byte[] nonce, long tag, String identity, String address, byte[] workerAddress) {
        byte[] id = identity.getBytes(StandardCharsets.UTF_8);
        byte[] addr = address.getBytes(StandardCharsets.UTF_8);
        byte[] wa = workerAddress == null ? new byte[0] : workerAddress;
        ByteBuffer b =
                record(HELLO, auth ? FLAG_AUTH : 0, NONCE_BYTES + 8 + 2 + id.length + 2 + addr.length + 4 + wa.length);
        b.put(nonce)
                .putLong(tag)
                .putShort((short) id.length)
                .put(id)
                .putShort((short) addr.length)
                .put(addr)
                .putInt(wa.length)
                .put(wa);
        return b.array();
    }

    static byte[] proof(byte[] mac) {
        return record(PROOF, 0, 1 + mac.length).put((byte) mac.length).put(mac).array();
    }

    static byte[] verdict(Verdict verdict, String reason) {
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        int len = Math.min(r.length, 1024);
        return record(VERDICT, 0, 1 + 2 + len)
                .put((byte) verdict.code)
                .putShort((short) len)
                .put(r, 0, len)
                .array();
    }

    private static ByteBuffer record(int type, int flags, int bodyBytes) {
        ByteBuffer b = ByteBuffer.allocate(8 + bodyBytes).order(ByteOrder.LITTLE_ENDIAN);
        return b.putInt(MAGIC).putShort((short) VERSION).put((byte) type).put((byte) flags);
    }

    /** Whether a record is a ucx4j-comm handshake record of another protocol version than ours. */
    private static boolean speaksOtherVersion(byte[] rec) {
        if (rec.length < 8) {
            return false;
        }
        ByteBuffer b = ByteBuffer.wrap(rec).order(ByteOrder.LITTLE_ENDIAN);
        return b.getInt() == MAGIC && (b.getShort() & 0xffff) != VERSION;
    }

    /** Checks magic and version and returns the body positioned after the 8-byte record header. */
    private static ByteBuffer open(byte[] rec, int expectedType) {
        ByteBuffer b = ByteBuffer.wrap(rec).order(ByteOrder.LITTLE_ENDIAN);
        if (rec.length < 8 || b.getInt() != MAGIC) {
            throw new CommProtocolException("not a ucx4j-comm handshake record (" + rec.length + " bytes, bad magic)");
        }
        int version = b.getShort() & 0xffff;
        int type = b.get() & 0xff;
        if (version != VERSION) {
            throw new CommProtocolException(
                    "handshake of protocol version " + version + "; this side speaks version " + VERSION);
        }
        if (type != expectedType) {
            throw new CommProtocolException("expected handshake record type " + expectedType + ", got " + type);
        }
        return b;
    }

    static Hello parseHello(byte[] rec) {
        ByteBuffer b = open(rec, HELLO);
        int flags = b.get() & 0xff;
        try {
            byte[] nonce = new byte[NONCE_BYTES];
            b.get(nonce);
            long tag = b.getLong();
            String id = string(b, b.getShort() & 0xffff, 1024, "identity");
            String addr = string(b, b.getShort() & 0xffff, 1024, "address");
            int waLen = b.getInt();
            if (waLen < 0 || waLen > b.remaining()) {
                throw new CommProtocolException(
                        "HELLO worker address claims " + waLen + " bytes, " + b.remaining() + " left");
            }
            byte[] wa = new byte[waLen];
            b.get(wa);
            if (b.hasRemaining()) {
                throw new CommProtocolException("HELLO has " + b.remaining() + " bytes after its end");
            }
            return new Hello(VERSION, (flags & FLAG_AUTH) != 0, nonce, tag, id, addr, waLen == 0 ? null : wa);
        } catch (BufferUnderflowException e) {
            throw new CommProtocolException("truncated HELLO (" + rec.length + " bytes)");
        }
    }

    private static Hello parseHelloOrVerdict(byte[] rec, String peer) {
        if (rec.length >= 8
                && ByteBuffer.wrap(rec).order(ByteOrder.LITTLE_ENDIAN).get(6) == VERDICT) {
            parseVerdict(rec, peer);
            throw new CommProtocolException("the " + peer + " accepted before the handshake was done");
        }
        return parseHello(rec);
    }

    private static byte[] parseProof(byte[] rec, boolean expectMac) {
        ByteBuffer b = open(rec, PROOF);
        b.get();
        try {
            int len = b.get() & 0xff;
            if (len != (expectMac ? MAC_BYTES : 0) || b.remaining() != len) {
                throw new CommAuthenticationException(
                        "handshake proof of " + len + " bytes; expected " + (expectMac ? MAC_BYTES : 0));
            }
            byte[] mac = new byte[len];
            b.get(mac);
            return mac;
        } catch (BufferUnderflowException e) {
            throw new CommProtocolException("truncated PROOF");
        }
    }

    private static void parseVerdict(byte[] rec, String peer) {
        ByteBuffer b = open(rec, VERDICT);
        b.get();
        try {
            Verdict verdict = Verdict.of(b.get() & 0xff);
            String reason = string(b, b.getShort() & 0xffff, 1024, "reason");
            switch (verdict) {
                case ACCEPTED -> {}
                case REFUSED_AUTH -> throw new CommAuthenticationException("the " + peer + " refused: " + reason);
                case REFUSED_VERSION ->
                    throw new CommProtocolException("the " + peer + " refused the protocol version: " + reason);
                case REFUSED_OTHER -> throw new CommException("the " + peer + " refused the connection: " + reason);
            }
        } catch (BufferUnderflowException e) {
            throw new CommProtocolException("truncated VERDICT");
        }
    }

    private static String string(ByteBuffer b, int len, int max, String what) {
        if (len > max || len > b.remaining()) {
            throw new CommProtocolException(
                    "handshake " + what + " of " + len + " bytes (at most " + max + ", " + b.remaining() + " left)");
        }
        byte[] s = new byte[len];
        b.get(s);
        return new String(s, StandardCharsets.UTF_8);
    }

    private static byte[] nonce() {
        byte[] n = new byte[NONCE_BYTES];
        RANDOM.nextBytes(n);
        return n;
    }

    static byte[] mac(byte[] secret, String label, byte[] first, byte[] second) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(secret, "HmacSHA256"));
            m.update(label.getBytes(StandardCharsets.US_ASCII));
            m.update(first);
            m.update(second);
            return m.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 unavailable", e);
        }
    }
}
