/**
 * UCX for the JVM: the public API of ucx4j-core. {@code org.ucx4j.spi} holds the hooks ucx4j's own
 * optional modules plug into ({@code UcxExtension}, {@code ConfigKeySet}); everything else (the FFM bindings, the worker's
 * progress engine and operation table) is in {@code org.ucx4j.internal}, which the module does not
 * export.
 *
 * <h2>The API on one page</h2>
 *
 * <table class="striped">
 * <caption>Types by concept; every operation has an {@code ...Async} form returning a {@link org.ucx4j.UcxFuture}
 * and a blocking twin</caption>
 * <thead><tr><th>Concept</th><th>Types</th><th>What you call</th></tr></thead>
 * <tbody>
 * <tr><td>Entry, availability</td><td>{@link org.ucx4j.Ucx}</td>
 *     <td>{@code isAvailable}, {@code ensureAvailable}, {@code configure}</td></tr>
 * <tr><td>Configuration</td><td>{@link org.ucx4j.UcxConfig}, {@link org.ucx4j.UcxKeys},
 *     {@link org.ucx4j.ConfigKey}, {@link org.ucx4j.ConfigEntry}, {@link org.ucx4j.ByteSize},
 *     {@link org.ucx4j.Feature}, {@link org.ucx4j.ProgressMode}, {@link org.ucx4j.WorkerOptions}</td>
 *     <td>{@code UcxConfig.load()}, {@code builder()}, {@code get}/{@code find}/{@code set(KEY)};
 *     {@code ByteSize.parse}; {@code WorkerOptions.builder()}</td></tr>
 * <tr><td>Context ({@code ucp_context_h})</td><td>{@link org.ucx4j.UcxContext}</td>
 *     <td>{@code create}, {@code builder}, {@code newWorker}, {@code mapMemory}, {@code allocateMemory},
 *     {@code transports}, {@code describe}, {@code close}</td></tr>
 * <tr><td>Worker ({@code ucp_worker_h})</td><td>{@link org.ucx4j.UcxWorker}</td>
 *     <td>{@code connect}, {@code listen}, {@code address}, {@code tagRecv} (tag receives are per worker), {@code tagProbe},
 *     {@code setAmHandler}, {@code setAmAllocator}, {@code flush}, {@code fence}, {@code progress},
 *     {@code await}, {@code close}</td></tr>
 * <tr><td>Connections</td><td>{@link org.ucx4j.UcxListener}, {@link org.ucx4j.ConnectionRequest},
 *     {@link org.ucx4j.ConnectionHandler}, {@link org.ucx4j.WorkerAddress},
 *     {@link org.ucx4j.EndpointErrorHandler}</td>
 *     <td>{@code ConnectionRequest.accept}/{@code reject}; {@code WorkerAddress.of}/{@code bytes}</td></tr>
 * <tr><td>Endpoint ({@code ucp_ep_h})</td><td>{@link org.ucx4j.UcxEndpoint}, {@link org.ucx4j.TagInfo},
 *     {@link org.ucx4j.CloseMode}</td>
 *     <td>tag: {@code tagSend}; stream: {@code streamSend}, {@code streamRecv};
 *     active messages: {@code amSend}, {@code amRecv}; RMA: {@code unpackRemoteKey}, {@code put},
 *     {@code get}; {@code flush}, {@code close}, {@code isOpen}, {@code failure}</td></tr>
 * <tr><td>Active messages</td><td>{@link org.ucx4j.AmHandler}, {@link org.ucx4j.AmAllocator},
 *     {@link org.ucx4j.AmMessage}, {@link org.ucx4j.AmSendMode}</td>
 *     <td>{@code UcxWorker.setAmHandler}, {@code setAmAllocator} (per {@code MemoryKind});
 *     {@code UcxEndpoint.amSend}</td></tr>
 * <tr><td>Memory</td><td>{@link org.ucx4j.MemoryRegion}, {@link org.ucx4j.RemoteKey},
 *     {@link org.ucx4j.MemoryKind}, {@link org.ucx4j.MemoryProvider}, {@link org.ucx4j.HostBufferPool}</td>
 *     <td>{@code MemoryRegion.packRemoteKey}, {@code segment}; {@code HostBufferPool.create},
 *     {@code allocate}; a {@code MemoryProvider} (ucx4j-cuda's GPU pool) behind allocators</td></tr>
 * <tr><td>Completion</td><td>{@link org.ucx4j.UcxFuture}</td>
 *     <td>a {@code CompletableFuture} only ucx4j completes; {@code cancel} and {@code orTimeout} cancel the
 *     UCX request</td></tr>
 * <tr><td>Errors</td><td>{@link org.ucx4j.UcxException} ({@link org.ucx4j.UcxStatus}) and the subclasses
 *     callers branch on: {@link org.ucx4j.UcxCanceledException}, {@link org.ucx4j.UcxTimeoutException},
 *     {@link org.ucx4j.UcxConnectionResetException}, {@link org.ucx4j.UcxUnreachableException};
 *     {@link org.ucx4j.UcxConfigException} for bad configuration</td><td></td></tr>
 * </tbody>
 * </table>
 *
 * <h2>Ownership and threading</h2>
 *
 * <p>A context owns its workers and memory regions; a worker owns its listeners and endpoints; an
 * endpoint owns the remote keys unpacked on it. Each is {@code AutoCloseable}, closing is idempotent,
 * and a parent closes its children. Every type is safe to use from any thread, virtual threads included.
 *
 * <h2 id="threading">Where ucx4j runs your code</h2>
 *
 * <p>Handlers ({@link org.ucx4j.ConnectionHandler} and {@code listen}'s accept callback,
 * {@link org.ucx4j.EndpointErrorHandler}, {@link org.ucx4j.AmHandler}), {@link org.ucx4j.AmAllocator}s,
 * and the continuations of {@link org.ucx4j.UcxFuture}s (stages attached without an executor, which run
 * when ucx4j completes the future) run:
 *
 * <ul>
 *   <li>on the worker's progress thread in {@link org.ucx4j.ProgressMode#THREAD_BLOCKING} and
 *       {@link org.ucx4j.ProgressMode#THREAD_POLLING} mode;
 *   <li>in {@link org.ucx4j.ProgressMode#CALLER} mode, on the thread inside that worker's
 *       {@link org.ucx4j.UcxWorker#progress()} or one of its blocking calls ({@code await}, {@code tagRecv},
 *       {@code close}, ...), which progress the worker while they wait.
 * </ul>
 *
 * <p>Never on a thread that only submits an operation (an {@code ...Async} call, {@code cancel},
 * {@code closeAsync}) or waits for one on a threaded worker: such a thread may hold locks of its own.
 * One worker runs them one at a time, never concurrently. Two exceptions, both explicit: a stage attached
 * to a future that is already done runs at once on the attaching thread ({@code CompletableFuture}'s
 * rule; use the {@code ...Async(fn, executor)} variants to choose), and operations still pending when a
 * worker is destroyed fail on the thread that closes it.
 *
 * <p>What they may do: start asynchronous operations (on any worker), cancel, close endpoints
 * ({@code close()} does not wait there), hand work to an executor. An operation started there on the same
 * worker reaches UCX when the UCX call that ran the handler or completed the future has returned (in the
 * same progress round, in the order started), never from inside UCX's callback: so its future is not yet
 * done when the {@code ...Async} call returns there, even for a message already received. They must not
 * block: a blocking ucx4j call on the same worker, and closing the worker, are refused with
 * {@link java.lang.IllegalStateException} (they could never complete); blocking on another worker, or on
 * a lock that a thread waiting for this worker holds, stalls this worker's progress or deadlocks it. A
 * handler that throws is logged; the exception never reaches UCX.
 */
package org.ucx4j;
