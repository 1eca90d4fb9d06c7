package org.ucx4j;

/**
 * Receives the active messages of one id ({@link UcxWorker#setAmHandler}).
 *
 * <p>Threading: runs on the worker's progress thread (in {@link ProgressMode#CALLER} mode, on the thread
 * inside {@link UcxWorker#progress()} or a blocking call of that worker), once per message, in arrival
 * order; never on a thread that merely submits or waits ({@linkplain org.ucx4j the package's threading
 * contract}). Keep it short and never block in it (blocking ucx4j calls on this worker are refused there);
 * starting asynchronous operations is fine. A handler that throws is logged; the message's data is still
 * received and later messages are still delivered.
 */
@FunctionalInterface
public interface AmHandler {
    /**
     * Called for each message.
     *
     * @param message the header, the size, the sender, and a future of the body
     */
    void onMessage(AmMessage message);
}
