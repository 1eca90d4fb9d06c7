/**
 * ucx4j-comm's public API: framed messages between two processes over a URI-addressed transport,
 * the JVM's counterpart of distributed-ucxx's comms.
 *
 * <h2>The API on one page</h2>
 *
 * <table class="striped">
 * <caption>Types by concept</caption>
 * <thead><tr><th>Concept</th><th>Types</th><th>What you call</th></tr></thead>
 * <tbody>
 * <tr><td>Entry: connect and listen by URI ({@code ucx://}, {@code ucxx://}, {@code ucx-worker://},
 *     {@code tcp://}, {@code inproc://})</td><td>{@link org.ucx4j.comm.Comms} (static, on the shared
 *     context), {@link org.ucx4j.comm.CommContext}</td>
 *     <td>{@code connect}, {@code connectAsync}, {@code listen}, {@code parse}, {@code schemes};
 *     {@code CommContext.create()}, {@code shared()}, {@code close()}</td></tr>
 * <tr><td>A connection</td><td>{@link org.ucx4j.comm.Comm}</td>
 *     <td>{@code write}, {@code writeAsync}, {@code read}, {@code readAsync}, {@code peerIdentity},
 *     {@code localAddress}, {@code peerAddress}, {@code close}, {@code abort}, {@code isClosed}</td></tr>
 * <tr><td>Accepting connections</td><td>{@link org.ucx4j.comm.CommListener},
 *     {@link org.ucx4j.comm.CommHandler}</td>
 *     <td>{@code address}, {@code addresses}, {@code close}; {@code CommHandler.onComm}</td></tr>
 * <tr><td>Messages</td><td>{@link org.ucx4j.comm.Message}, {@link org.ucx4j.comm.Frame}</td>
 *     <td>{@code Message.of}, {@code ofBytes}, {@code frames}, {@code frame}, {@code byteSize},
 *     {@code close} (a received message owns its frames' memory until closed)</td></tr>
 * <tr><td>Receive memory</td><td>{@link org.ucx4j.comm.FrameAllocator}</td>
 *     <td>{@code FrameAllocator.host()}, or your own (device memory, pools)</td></tr>
 * <tr><td>Options</td><td>{@link org.ucx4j.comm.CommOptions}, {@link org.ucx4j.comm.CommKeys}</td>
 *     <td>{@code CommOptions.builder()}: the UCX configuration, identity, shared secret, timeouts,
 *     frame limits, allocator</td></tr>
 * <tr><td>Errors</td><td>{@link org.ucx4j.comm.CommException} and the subclasses callers branch on:
 *     {@link org.ucx4j.comm.CommClosedException}, {@link org.ucx4j.comm.CommTimeoutException},
 *     {@link org.ucx4j.comm.CommProtocolException}, {@link org.ucx4j.comm.CommAuthenticationException}</td>
 *     <td></td></tr>
 * </tbody>
 * </table>
 *
 * <p>Adding a transport: implement {@link org.ucx4j.comm.spi.Transport} and register it with
 * {@code ServiceLoader} (see {@code org.ucx4j.comm.spi}). The built-in transports and the wire format
 * are in {@code org.ucx4j.comm.internal}, which the module does not export.
 *
 * <h2>Ownership</h2>
 *
 * <p>The caller closes each comm and listener. A {@link org.ucx4j.comm.CommContext} owns what they share
 * (UCX workers, receive arenas, {@code inproc://} names); {@code Comms}' static methods use the
 * process-wide {@link org.ucx4j.comm.CommContext#shared()}.
 *
 * <h2>Threading</h2>
 *
 * <p>Every type is safe from any thread. A {@code Comm}'s futures may complete on a transport thread
 * (for {@code ucx://}, the UCX worker's progress thread): never block in their callbacks; the blocking
 * methods refuse to run there.
 */
package org.ucx4j.comm;
