package org.ucx4j.comm;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A connection to one peer carrying whole {@link Message}s in order, over any transport
 * ({@code ucx://}, {@code tcp://}, {@code inproc://}, ...). Get one from {@link Comms#connect} or from
 * a listener's {@link CommHandler}.
 *
 * <p>Reads: messages arrive in the order the peer wrote them. A peer that writes faster than you read
 * is held back, not buffered without bound: on {@code tcp://} by the TCP window (one message is received
 * ahead of your reads), on {@code ucx://} by flow control (at most 32 messages ahead, their frames
 * received only when there is room; docs/WIRE.md). {@link #read(Duration)} that times out leaves the
 * comm open and usable: the message it was waiting for goes to the next read, nothing is lost.
 *
 * <p>Writes: {@link #writeAsync} returns when the message is queued; its future completes when the
 * frames' memory may be reused, which waits for the peer's reader when it is that far behind ({@link
 * #write} blocks meanwhile). Messages written from several threads at once are each kept whole and
 * leave in the order their writes were called.
 *
 * <p>Closing: {@link #close()} is graceful: messages written before it are delivered, then the peer's
 * reads fail with {@link CommClosedException}. {@link #abort()} drops everything at once. A dead peer
 * (killed, network gone) fails pending and later reads and writes with {@link CommClosedException}
 * within the transport's detection time; nothing waits forever. A peer that closes while this side
 * writes, even with large transfers half done, fails this side's pending and later writes with
 * {@link CommClosedException} (saying the peer closed) at once, never a hang or a crash.
 *
 * <p>Received messages: each message a read returns owns its memory, and the reader closes it (see
 * {@link Message}). What unclosed messages hold is bounded per comm context ({@link
 * CommKeys#MAX_UNCLOSED_BYTES}): above it, comms stop receiving until messages are closed or reclaimed.
 *
 * <p>Futures may complete on a transport thread (for {@code ucx://}, the worker's progress thread):
 * never block in their callbacks; the blocking methods refuse to run there.
 *
 * <p>Threading: safe from any thread. Ownership: the caller closes it; a listener's comms are not closed
 * by closing the listener.
 */
public interface Comm extends AutoCloseable {
    /**
     * Sends a message.
     *
     * @param message the frames to send (see {@link Frame} about their memory)
     * @return completes when the frames may be reused; fails with {@link CommClosedException} when the
     *     comm closed first, and with {@link CommException} when the message is larger than this side's
     *     {@code max-message-size} (then nothing is sent and the comm stays open)
     */
    CompletableFuture<Void> writeAsync(Message message);

    /**
     * Blocking twin of {@link #writeAsync}.
     *
     * @param message the frames
     * @throws CommClosedException when the comm is or gets closed
     * @throws CommException when the message is larger than {@code max-message-size} (nothing is sent,
     *     the comm stays open)
     */
    void write(Message message);

    /**
     * Receives the next message.
     *
     * @return completes with the message (which owns its memory: close it when done); fails with
     *     {@link CommClosedException} after the peer closed and every earlier message was read, and with
     *     {@link CommException} when messages read earlier were left unclosed past {@link
     *     CommKeys#MAX_UNCLOSED_BYTES} for longer than the connect timeout
     */
    CompletableFuture<Message> readAsync();

    /**
     * Blocking twin of {@link #readAsync()}.
     *
     * @return the next message
     * @throws CommClosedException when the comm is closed
     */
    Message read();

    /**
     * Receives the next message, waiting at most {@code timeout}.
     *
     * @param timeout how long to wait
     * @return the next message
     * @throws CommTimeoutException when none arrives in time (the comm stays open and usable)
     * @throws CommClosedException when the comm is closed
     */
    Message read(Duration timeout);

    /**
     * Closes gracefully: what was written before is delivered to the peer, then the peer's reads fail
     * with {@link CommClosedException}; reads pending here fail with it, later writes too. Waits at
     * most {@link CommOptions#closeTimeout()} for the close marker to leave; if the peer reads too slowly
     * for that, the marker and the messages before it still go, and the connection is released after
     * them (or at once when the peer turns out dead). Idempotent.
     */
    @Override
    void close();

    /** Closes at once: pending reads and writes here fail, the peer sees the connection drop. Idempotent. */
    void abort();

    /**
     * Whether the comm is closed (on either side, or lost).
     *
     * @return true once no more messages can be written
     */
    boolean isClosed();

    /**
     * This side's address, with the transport's scheme (for a listener's comm, the address the client
     * connected to).
     *
     * @return the address
     */
    URI localAddress();

    /**
     * The peer's address, with the transport's scheme (for a listener's comm, the client's address as
     * the connection shows it).
     *
     * @return the address
     */
    URI peerAddress();

    /**
     * The peer's identity as it announced it in the handshake (for example {@code host/pid}).
     *
     * @return the identity string
     */
    String peerIdentity();

    /**
     * The transports beneath this comm that carry a message whose frames are {@code frameSize} bytes, as the
     * layer below knows them: for {@code ucx://}, UCX's transports for a tag message of that size from host
     * memory ({@code [sysv]}, {@code [cma]}, {@code [tcp]}, ...; see {@code UcxEndpoint.tagTransports}). Meant
     * for reports ({@code ucx4j demo}), not for decisions.
     *
     * <p>Threading: any thread. The default, for transports with nothing beneath to name ({@code tcp://} is a
     * socket, {@code inproc://} memory), says nothing.
     *
     * @param frameSize the size of the message's frames in bytes
     * @return transport names; empty when the comm cannot say (also when it is closed)
     */
    default List<String> carriedBy(long frameSize) {
        return List.of();
    }
}
