package org.ucx4j.comm.spi;

import java.net.URI;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.ucx4j.comm.Comm;
import org.ucx4j.comm.CommHandler;
import org.ucx4j.comm.CommListener;
import org.ucx4j.comm.CommOptions;

/**
 * A transport for {@link org.ucx4j.comm.Comms}, found with {@link java.util.ServiceLoader} by the
 * URI schemes it serves. To add one, implement this interface with a public no-argument constructor
 * and declare it ({@code provides org.ucx4j.comm.spi.Transport with ...} in module-info, or a line in
 * {@code META-INF/services/org.ucx4j.comm.spi.Transport} on the class path). A transport should keep
 * the {@link Comm} contract: whole messages in order, graceful close after the messages before it,
 * reads that fail (never hang) when the peer dies; the conformance suite in ucx4j-comm's tests checks it.
 *
 * <p>Threading: one instance serves the whole process; its methods are called from any thread.
 */
public interface Transport {
    /**
     * The URI schemes this transport serves (lower case), for example {@code ucx} and {@code ucxx}.
     *
     * @return the schemes
     */
    Set<String> schemes();

    /**
     * Starts listening.
     *
     * @param address where (port 0: any free port)
     * @param handler receives each accepted comm after its handshake
     * @param options settings
     * @return the listener
     * @throws IllegalArgumentException for an address this transport cannot use
     * @throws org.ucx4j.comm.CommException when listening fails (address in use, ...)
     */
    CommListener listen(URI address, CommHandler handler, CommOptions options);

    /**
     * Connects, handshake included, within {@link CommOptions#connectTimeout()}.
     *
     * @param address the listener's address
     * @param options settings
     * @return the comm, or a failure ({@link org.ucx4j.comm.CommTimeoutException},
     *     {@link org.ucx4j.comm.CommAuthenticationException}, {@link org.ucx4j.comm.CommException})
     */
    CompletableFuture<Comm> connectAsync(URI address, CommOptions options);

    /**
     * Releases what this instance holds (UCX contexts and workers, cached memory, a name space); called
     * once, when the {@link org.ucx4j.comm.CommContext} that loaded it closes. Comms and listeners
     * still open keep working until their owners close them. The default does nothing.
     */
    default void close() {}
}
