/**
 * The service-provider interface for ucx4j-comm transports.
 *
 * <h2>The API on one page</h2>
 *
 * <p>One type, {@link org.ucx4j.comm.spi.Transport}: {@code schemes()} (the URI schemes it serves),
 * {@code listen(URI, CommHandler, CommOptions)} and {@code connectAsync(URI, CommOptions)}. A transport
 * registers itself with {@code ServiceLoader} ({@code provides org.ucx4j.comm.spi.Transport with ...}
 * in its module descriptor, or {@code META-INF/services} on the class path);
 * {@link org.ucx4j.comm.Comms} finds it by scheme. The connections and listeners it returns follow the
 * contracts of {@link org.ucx4j.comm.Comm} and {@link org.ucx4j.comm.CommListener}: the conformance
 * suite in ucx4j-comm's tests is written against those interfaces and runs for every built-in
 * transport.
 */
package org.ucx4j.comm.spi;
