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
 *     <td>{@code connect}, {@code listen}, {@code address}, {@code tagRecv}, {@code tagProbe},
 *     {@code setAmHandler}, {@code setAmAllocator}, {@code flush}, {@code fence}, {@code progress},
 *     {@code await}, {@code close}</td></tr>
 * <tr><td>Connections</td><td>{@link org.ucx4j.UcxListener}, {@link org.ucx4j.ConnectionRequest},
 *     {@link org.ucx4j.ConnectionHandler}, {@link org.ucx4j.WorkerAddress},
 *     {@link org.ucx4j.EndpointErrorHandler}</td>
 *     <td>{@code ConnectionRequest.accept}/{@code reject}; {@code WorkerAddress.of}/{@code bytes}</td></tr>
 * <tr><td>Endpoint ({@code ucp_ep_h})</td><td>{@link org.ucx4j.UcxEndpoint}, {@link org.ucx4j.TagInfo},
 *     {@link org.ucx4j.CloseMode}</td>
 *     <td>tag: {@code tagSend}, {@code tagRecv}; stream: {@code streamSend}, {@code streamRecv};
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
 *     <td>a {@code CompletableFuture} whose {@code cancel} cancels the UCX request</td></tr>
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
 * Futures complete, and handlers run, on the worker's progress thread (or the caller's, in
 * {@link org.ucx4j.ProgressMode#CALLER} mode); blocking calls from there are refused with
 * {@link java.lang.IllegalStateException}, because they could never complete.
 */
package org.ucx4j;
