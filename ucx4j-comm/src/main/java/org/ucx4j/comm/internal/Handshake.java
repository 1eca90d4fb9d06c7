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
 * The connection handshake of docs/WIRE.md (protocol version {@value #VERSION}): version check, identities, the
 * addresses each side sees, and, when a shared secret is configured, an HMAC-SHA256 challenge and
 * response in both directions. The listener proves first; the client answers only a listener that
 * proved the same secret, and the listener refuses a wrong or missing proof before any message is
 * delivered. What a comm needs to reach its peer over UCX (the tag it receives on, its worker
 * address: an {@link Endpoint}) travels only after the proofs, inside the client's PROOF and the
 * listener's accepting VERDICT, each bound to the nonces by a MAC when there is a secret: a peer that
 * did not authenticate never learns a comm's tag, and no worker address it sends reaches UCX.
 *
 * <pre>
 * client -> listener   HELLO   (version, auth flag, nonce C, hello tag, identity, address used,
 *                               IP-less: worker address and its MAC)
 * listener -> client   HELLO   (version, auth flag, nonce L, hello tag, identity, client address seen)
 *                      PROOF   HMAC(secret, "ucx4j-comm/2 listener" | C | L | offer), offer
 *                              (the MAC is empty without a secret)
 * client -> listener   PROOF   HMAC(secret, "ucx4j-comm/2 client" | L | C | endpoint), endpoint
 * listener -> client   VERDICT (0 accepted | 1 version | 2 authentication | 3 other, reason;
 *                               accepted: endpoint, HMAC(secret, "ucx4j-comm/2 accept" | C | L | endpoint))
 * </pre>
 * A listener that refuses at any step sends a VERDICT instead of its next record. The listener's offer is
 * an endpoint with no tag and no worker address: its {@link Endpoint#sameHost()} token, when not empty,
 * offers a pair of same-host workers ({@code ucx://} between two processes of one host, see
 * {@link SameHost}); a client that takes the offer sends its own token in its endpoint, and the listener
 * answers with its token in the VERDICT's. A client's token without an offer is refused.
 */
final class Handshake {
    /** "U4JH". */
    static final int MAGIC = 0x484A3455;

    static final int VERSION = 4;
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

    /** What a HELLO says; {@code helloMac} is empty unless an IP-less client with a secret sent it. */
    record Hello(
            int version,
            boolean auth,
            byte[] nonce,
            long tag,
            String identity,
            String address,
            byte[] workerAddress,
            byte[] helloMac) {}

    /** The most bytes a same-host token may have ({@link Endpoint#sameHost()}). */
    static final int MAX_SAME_HOST = 512;

    /**
     * What one side gives its authenticated peer: the tag its comm receives on and its UCX worker
     * address ({@code ucx://}), or nothing ({@link #NONE}: {@code tcp://}, {@code inproc://}; IP-less
     * sides give a tag only). {@code sameHost}: empty, or the side's same-host token ({@link SameHost}),
     * which says that the worker address is that of a worker kept for this peer process alone.
     */
    record Endpoint(long tag, byte[] workerAddress, byte[] sameHost) {
        static final Endpoint NONE = new Endpoint(0, new byte[0]);

        Endpoint(long tag, byte[] workerAddress) {
            this(tag, workerAddress, new byte[0]);
        }

        /** An offer of same-host workers: a listener's token and nothing else (empty: no offer). */
        static Endpoint offer(byte[] sameHost) {
            return new Endpoint(0, new byte[0], sameHost);
        }

        /** Whether this endpoint carries a same-host token. */
        boolean isSameHost() {
            return sameHost.length > 0;
        }

        byte[] encode() {
            return ByteBuffer.allocate(8 + 4 + workerAddress.length + 2 + sameHost.length)
                    .order(ByteOrder.LITTLE_ENDIAN)
                    .putLong(tag)
                    .putInt(workerAddress.length)
                    .put(workerAddress)
                    .putShort((short) sameHost.length)
                    .put(sameHost)
                    .array();
        }
    }

    /**
     * What the client gives an authenticated listener, chosen once it has the listener's offer (proved
     * with the secret when there is one).
     */
    @FunctionalInterface
    interface Answer {
        Endpoint mine(Endpoint offer) throws Exception;
    }

    /**
     * What the handshake established about the peer: its identity, the tag of its HELLO (IP-less
     * handshakes), the address it saw, and the endpoint it gave after authentication.
     */
    record Result(String peerIdentity, long peerHelloTag, String addressSeenByPeer, Endpoint peerEndpoint) {
        /** The tag the peer's comm receives on. */
        long peerTag() {
            return peerEndpoint.tag();
        }
    }

    // ------------------------------------------------------------------ the two sides

    static Result client(
            HandshakeChannel ch, CommOptions options, long myTag, String addressUsed, byte[] myWorkerAddress)
            throws Exception {
        return client(ch, options, myTag, addressUsed, myWorkerAddress, offer -> Endpoint.NONE);
    }

    /**
     * The client's side. {@code helloTag} and {@code iplessWorkerAddress}: what an IP-less client's
     * HELLO carries (0 and null elsewhere); {@code answer}: what it gives the listener once the listener
     * has proved the secret, given the listener's offer. A listener's endpoint in the VERDICT must carry
     * a same-host token exactly when the client's did.
     */
    static Result client(
            HandshakeChannel ch,
            CommOptions options,
            long helloTag,
            String addressUsed,
            byte[] iplessWorkerAddress,
            Answer answer)
            throws Exception {
        Optional<byte[]> secret = options.secret();
        byte[] nonceC = nonce();
        byte[] helloMac = secret.isPresent() && iplessWorkerAddress != null
                ? mac(secret.get(), "ucx4j-comm/2 ipless hello", nonceC, iplessHelloBody(helloTag, iplessWorkerAddress))
                : new byte[0];
        ch.send(hello(
                secret.isPresent(), nonceC, helloTag, options.identity(), addressUsed, iplessWorkerAddress, helloMac));
        byte[] r = ch.receive();
        Hello h = parseHelloOrVerdict(r, "listener");
        if (h.auth() != secret.isPresent()) {
            throw new CommAuthenticationException(
                    secret.isPresent()
                            ? "the listener has no shared secret but this side has one (auth.secret): refusing an unauthenticated peer"
                            : "the listener requires a shared secret: set auth.secret or auth.secret-file");
        }
        Proof listenerProof = parseProof(ch.receive(), secret.isPresent());
        Endpoint offer = listenerProof.endpoint();
        if (secret.isPresent()
                && !proves(
                        listenerProof.mac(),
                        secret.get(),
                        "ucx4j-comm/2 listener",
                        nonceC,
                        h.nonce(),
                        offer.encode())) {
            throw new CommAuthenticationException("the listener proved a different shared secret (auth.secret)");
        }
        if (offer.tag() != 0 || offer.workerAddress().length != 0) {
            throw new CommProtocolException("the listener's PROOF carries an endpoint, not only an offer");
        }
        Endpoint mine = answer.mine(offer);
        if (mine.isSameHost() && !offer.isSameHost()) {
            throw new IllegalStateException("a same-host endpoint without the listener's offer");
        }
        byte[] mineBytes = mine.encode();
        if (secret.isPresent()) {
            ch.send(proof(mac(secret.get(), "ucx4j-comm/2 client", h.nonce(), nonceC, mineBytes), mine));
        } else {
            ch.send(proof(new byte[0], mine));
        }
        Accepted a = parseVerdict(ch.receive(), "listener");
        if (secret.isPresent()
                && !proves(
                        a.mac(),
                        secret.get(),
                        "ucx4j-comm/2 accept",
                        nonceC,
                        h.nonce(),
                        a.endpoint().encode())) {
            throw new CommAuthenticationException(
                    "the listener's accepting VERDICT carries a wrong MAC (altered on the way?)");
        }
        if (a.endpoint().isSameHost() != mine.isSameHost()) {
            throw new CommProtocolException(
                    mine.isSameHost()
                            ? "the listener accepted without the same-host worker this side asked for"
                            : "the listener answered with a same-host worker this side did not ask for");
        }
        return new Result(h.identity(), h.tag(), h.address(), a.endpoint());
    }

    /** What an IP-less client's HELLO MAC covers besides its nonce: its hello tag and worker address. */
    private static byte[] iplessHelloBody(long helloTag, byte[] workerAddress) {
        return ByteBuffer.allocate(8 + workerAddress.length)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putLong(helloTag)
                .put(workerAddress)
                .array();
    }

    /**
     * Checks an IP-less client's HELLO before its worker address goes anywhere near UCX (which aborts
     * the process on a malformed one): with a secret, the HELLO's MAC over its nonce, tag and worker
     * address must match; without one, every client is trusted (docs/WIRE.md, threat model).
     *
     * @throws CommAuthenticationException when the MAC is missing or wrong
     */
    static void checkIplessHello(Hello h, CommOptions options) {
        Optional<byte[]> secret = options.secret();
        if (secret.isEmpty()) {
            return;
        }
        // A HELLO saying "no secret" must not skip the check: the handshake would refuse the disagreement,
        // but only after the listener connected to the worker address, which UCX parses (and aborts on).
        if (!h.auth() || h.helloMac() == null) {
            throw new CommAuthenticationException(
                    "an IP-less client without the shared secret: this listener requires auth.secret");
        }
        if (!proves(
                h.helloMac(),
                secret.get(),
                "ucx4j-comm/2 ipless hello",
                h.nonce(),
                iplessHelloBody(h.tag(), h.workerAddress()))) {
            throw new CommAuthenticationException(
                    "an IP-less client's HELLO carries no valid MAC of its worker address (wrong or no shared secret)");
        }
    }

    /**
     * The listener's side. {@code firstHello} is the client's HELLO when the transport already read it
     * (ucx-worker), else null.
     */
    static Result listener(
            HandshakeChannel ch, CommOptions options, long myTag, String clientAddressSeen, byte[] firstHello)
            throws Exception {
        return listener(ch, options, myTag, clientAddressSeen, firstHello, Endpoint.NONE, peer -> Endpoint.NONE);
    }

    /**
     * What the listener does with an authenticated client's endpoint before it accepts (creates its
     * UCX endpoint from it), and what it gives the client in return; a failure refuses the client.
     */
    @FunctionalInterface
    interface OnAuthenticated {
        Endpoint accept(Endpoint peer) throws Exception;
    }

    /**
     * The listener's side. {@code firstHello} is the client's HELLO when the transport already read it
     * (ucx-worker), else null; {@code helloTag} the tag its HELLO announces (IP-less), {@code offer} what
     * its PROOF offers ({@link Endpoint#offer}, or {@link Endpoint#NONE}); {@code onAuthenticated} runs
     * on the authenticated client's endpoint and gives what goes into the accepting VERDICT.
     */
    static Result listener(
            HandshakeChannel ch,
            CommOptions options,
            long helloTag,
            String clientAddressSeen,
            byte[] firstHello,
            Endpoint offer,
            OnAuthenticated onAuthenticated)
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
        ch.send(hello(secret.isPresent(), nonceL, helloTag, options.identity(), clientAddressSeen, null, new byte[0]));
        ch.send(proof(
                secret.isPresent()
                        ? mac(secret.get(), "ucx4j-comm/2 listener", c.nonce(), nonceL, offer.encode())
                        : new byte[0],
                offer));
        Proof proofC;
        try {
            proofC = parseProof(ch.receive(), secret.isPresent());
        } catch (CommAuthenticationException e) { // a proof of the wrong length: says lengths, nothing secret
            refuse(ch, Verdict.REFUSED_AUTH, e.getMessage());
            throw e;
        } catch (CommProtocolException e) { // not a PROOF record, or out of bounds
            refuse(ch, Verdict.REFUSED_OTHER, e.getMessage());
            throw e;
        }
        if (secret.isPresent()
                && !proves(
                        proofC.mac(),
                        secret.get(),
                        "ucx4j-comm/2 client",
                        nonceL,
                        c.nonce(),
                        proofC.endpoint().encode())) {
            refuse(ch, Verdict.REFUSED_AUTH, "wrong shared secret");
            throw new CommAuthenticationException("client " + c.identity() + " proved a wrong shared secret");
        }
        if (proofC.endpoint().isSameHost() && !offer.isSameHost()) {
            String why = "the client asked for a same-host worker this listener did not offer";
            refuse(ch, Verdict.REFUSED_OTHER, why);
            throw new CommProtocolException(why + " (client " + c.identity() + ")");
        }
        Endpoint mine;
        try {
            mine = onAuthenticated.accept(proofC.endpoint());
        } catch (Exception e) {
            refuse(ch, Verdict.REFUSED_OTHER, "the listener cannot reach this client: " + Failures.describe(e));
            throw e;
        }
        byte[] acceptMac = secret.isPresent()
                ? mac(secret.get(), "ucx4j-comm/2 accept", c.nonce(), nonceL, mine.encode())
                : new byte[0];
        ch.send(accepted(mine, acceptMac));
        return new Result(c.identity(), c.tag(), c.address(), proofC.endpoint());
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
        return hello(auth, nonce, tag, identity, address, workerAddress, new byte[0]);
    }

    static byte[] hello(
            boolean auth,
            byte[] nonce,
            long tag,
            String identity,
            String address,
            byte[] workerAddress,
            byte[] helloMac) {
        byte[] id = identity.getBytes(StandardCharsets.UTF_8);
        byte[] addr = address.getBytes(StandardCharsets.UTF_8);
        byte[] wa = workerAddress == null ? new byte[0] : workerAddress;
        ByteBuffer b = record(
                HELLO,
                auth ? FLAG_AUTH : 0,
                NONCE_BYTES + 8 + 2 + id.length + 2 + addr.length + 4 + wa.length + 1 + helloMac.length);
        b.put(nonce)
                .putLong(tag)
                .putShort((short) id.length)
                .put(id)
                .putShort((short) addr.length)
                .put(addr)
                .putInt(wa.length)
                .put(wa)
                .put((byte) helloMac.length)
                .put(helloMac);
        return b.array();
    }

    static byte[] proof(byte[] mac) {
        return proof(mac, Endpoint.NONE);
    }

    static byte[] proof(byte[] mac, Endpoint endpoint) {
        byte[] e = endpoint.encode();
        return record(PROOF, 0, 1 + mac.length + e.length)
                .put((byte) mac.length)
                .put(mac)
                .put(e)
                .array();
    }

    /** An accepting VERDICT: the listener's endpoint and its MAC (empty without a secret). */
    static byte[] accepted(Endpoint endpoint, byte[] mac) {
        byte[] e = endpoint.encode();
        return record(VERDICT, 0, 1 + 2 + e.length + 1 + mac.length)
                .put((byte) Verdict.ACCEPTED.code)
                .putShort((short) 0)
                .put(e)
                .put((byte) mac.length)
                .put(mac)
                .array();
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
            int macLen = b.get() & 0xff;
            if (macLen != 0 && macLen != MAC_BYTES) {
                throw new CommProtocolException("HELLO MAC of " + macLen + " bytes (0 or " + MAC_BYTES + ")");
            }
            byte[] helloMac = new byte[macLen];
            b.get(helloMac);
            if (b.hasRemaining()) {
                throw new CommProtocolException("HELLO has " + b.remaining() + " bytes after its end");
            }
            return new Hello(VERSION, (flags & FLAG_AUTH) != 0, nonce, tag, id, addr, waLen == 0 ? null : wa, helloMac);
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

    /** A PROOF: the MAC and the endpoint after it. */
    record Proof(byte[] mac, Endpoint endpoint) {}

    /** An accepting VERDICT: the listener's endpoint and the MAC over it. */
    record Accepted(Endpoint endpoint, byte[] mac) {}

    static Proof parseProof(byte[] rec, boolean expectMac) {
        ByteBuffer b = open(rec, PROOF);
        b.get();
        try {
            int len = b.get() & 0xff;
            if (len != (expectMac ? MAC_BYTES : 0) || b.remaining() < len) {
                throw new CommAuthenticationException(
                        "handshake proof of " + len + " bytes; expected " + (expectMac ? MAC_BYTES : 0));
            }
            byte[] mac = new byte[len];
            b.get(mac);
            Endpoint e = endpoint(b, "PROOF");
            if (b.hasRemaining()) {
                throw new CommProtocolException("PROOF has " + b.remaining() + " bytes after its end");
            }
            return new Proof(mac, e);
        } catch (BufferUnderflowException e) {
            throw new CommProtocolException("truncated PROOF");
        }
    }

    private static Endpoint endpoint(ByteBuffer b, String record) {
        long tag = b.getLong();
        int waLen = b.getInt();
        if (waLen < 0 || waLen > b.remaining()) {
            throw new CommProtocolException(record + " worker address claims " + Integer.toUnsignedString(waLen)
                    + " bytes, " + b.remaining() + " left");
        }
        byte[] wa = new byte[waLen];
        b.get(wa);
        int shLen = b.getShort() & 0xffff;
        if (shLen > MAX_SAME_HOST || shLen > b.remaining()) {
            throw new CommProtocolException(record + " same-host token of " + shLen + " bytes (at most " + MAX_SAME_HOST
                    + ", " + b.remaining() + " left)");
        }
        byte[] sh = new byte[shLen];
        b.get(sh);
        return new Endpoint(tag, wa, sh);
    }

    /** Reads a VERDICT: the accepting one's endpoint and MAC, or the refusal as an exception. */
    private static Accepted parseVerdict(byte[] rec, String peer) {
        ByteBuffer b = open(rec, VERDICT);
        b.get();
        try {
            Verdict verdict = Verdict.of(b.get() & 0xff);
            String reason = string(b, b.getShort() & 0xffff, 1024, "reason");
            switch (verdict) {
                case ACCEPTED -> {
                    Endpoint e = endpoint(b, "VERDICT");
                    int macLen = b.get() & 0xff;
                    if (macLen > MAC_BYTES || macLen != b.remaining()) {
                        throw new CommProtocolException("VERDICT MAC of " + macLen + " bytes, " + b.remaining()
                                + " left (0 or " + MAC_BYTES + ")");
                    }
                    byte[] mac = new byte[macLen];
                    b.get(mac);
                    return new Accepted(e, mac);
                }
                case REFUSED_AUTH -> throw new CommAuthenticationException("the " + peer + " refused: " + reason);
                case REFUSED_VERSION ->
                    throw new CommProtocolException("the " + peer + " refused the protocol version: " + reason);
                case REFUSED_OTHER -> throw new CommException("the " + peer + " refused the connection: " + reason);
            }
            throw new IllegalStateException("unreachable");
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

    /** Whether {@code mac} is the MAC of the parts under the secret and label (compared in constant time). */
    static boolean proves(byte[] mac, byte[] secret, String label, byte[]... parts) {
        return MessageDigest.isEqual(mac(secret, label, parts), mac);
    }

    static byte[] mac(byte[] secret, String label, byte[]... parts) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(secret, "HmacSHA256"));
            m.update(label.getBytes(StandardCharsets.US_ASCII));
            for (byte[] p : parts) {
                m.update(p);
            }
            return m.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 unavailable", e);
        }
    }
}
