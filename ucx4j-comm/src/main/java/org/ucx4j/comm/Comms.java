package org.ucx4j.comm;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.comm.spi.Transport;

/**
 * The entry point: listen on and connect to URI addresses. Swapping {@code tcp://} for
 * {@code ucx://} is all it takes to change transport.
 *
 * <pre>{@code
 * try (CommListener listener = Comms.listen("ucx://127.0.0.1:0", comm -> {
 *          try (comm) { comm.write(comm.read()); }            // echo one message
 *      });
 *      Comm comm = Comms.connect(listener.address())) {
 *     comm.write(Message.ofBytes("hello".getBytes()));
 *     try (Message reply = comm.read()) { ... }
 * }
 * }</pre>
 *
 * <p>Schemes: {@code ucx://host:port} (alias {@code ucxx://}), {@code ucx-worker://<address>} (IP-less,
 * published by {@code ucx://} listeners), {@code tcp://host:port}, {@code inproc://name}, and whatever
 * transports on the class or module path add ({@link Transport}). IPv6 hosts go in brackets:
 * {@code tcp://[::1]:0}.
 *
 * <p>Every method here uses {@link CommContext#shared()}, the process-wide context; make your own
 * {@link CommContext} to hold the lifetime of the UCX workers and caches behind your comms.
 *
 * <p>Threading: all methods are thread-safe.
 */
public final class Comms {
    private Comms() {}

    /**
     * Listens with {@link CommOptions#defaults()}.
     *
     * @param address where, for example {@code "ucx://0.0.0.0:0"}
     * @param handler receives each accepted comm
     * @return the listener
     */
    public static CommListener listen(String address, CommHandler handler) {
        return listen(parse(address), handler, CommOptions.defaults());
    }

    /**
     * Listens.
     *
     * @param address where; port 0 picks a free port (see {@link CommListener#address()})
     * @param handler receives each accepted comm after its handshake, on a virtual thread of its own
     * @param options settings
     * @return the listener, owned by the caller
     * @throws IllegalArgumentException for an unknown scheme or an unusable address
     * @throws CommException when listening fails
     */
    public static CommListener listen(URI address, CommHandler handler, CommOptions options) {
        return CommContext.shared().listen(address, handler, options);
    }

    /**
     * Connects with {@link CommOptions#defaults()}.
     *
     * @param address the listener's address
     * @return the comm
     */
    public static Comm connect(String address) {
        return connect(parse(address), CommOptions.defaults());
    }

    /**
     * Connects with {@link CommOptions#defaults()}.
     *
     * @param address the listener's address
     * @return the comm
     */
    public static Comm connect(URI address) {
        return connect(address, CommOptions.defaults());
    }

    /**
     * Connects, waiting for the handshake.
     *
     * @param address the listener's address
     * @param options settings
     * @return the comm, owned by the caller
     * @throws CommTimeoutException when it takes longer than {@link CommOptions#connectTimeout()}
     * @throws CommAuthenticationException when the shared secrets differ
     * @throws CommException when the peer cannot be reached or refuses
     */
    public static Comm connect(URI address, CommOptions options) {
        return CommContext.shared().connect(address, options);
    }

    /**
     * Connects asynchronously.
     *
     * @param address the listener's address
     * @param options settings
     * @return completes with the comm after the handshake
     */
    public static CompletableFuture<Comm> connectAsync(URI address, CommOptions options) {
        return CommContext.shared().connectAsync(address, options);
    }

    /**
     * Parses an address, with an error that names it.
     *
     * @param address for example {@code tcp://[::1]:9000}
     * @return the URI
     * @throws IllegalArgumentException when it is not a URI with a scheme
     */
    public static URI parse(String address) {
        java.util.Objects.requireNonNull(address, "address");
        try {
            URI uri = new URI(address);
            if (uri.getScheme() == null) {
                throw new IllegalArgumentException("comm address '" + address + "' has no scheme; use one of "
                        + schemes() + ", for example tcp://127.0.0.1:0");
            }
            return uri;
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("comm address '" + address + "' is not a URI: " + e.getMessage(), e);
        }
    }

    /**
     * The schemes of every transport found.
     *
     * @return the schemes, sorted
     */
    public static Set<String> schemes() {
        return CommContext.shared().schemes();
    }

    /**
     * The transport serving a scheme.
     *
     * @param address an address with that scheme
     * @return the transport
     * @throws IllegalArgumentException when no transport serves it
     */
    public static Transport transport(URI address) {
        return CommContext.shared().transport(address);
    }
}
