package org.ucx4j;

/**
 * Receives the active messages of one id ({@link UcxWorker#setAmHandler}).
 *
 * <p>Threading: runs on the worker's progress thread, once per message, in arrival order. Keep it short
 * and never block in it (blocking ucx4j calls are refused there). A handler that throws is logged; the
 * message's data is still received and later messages are still delivered.
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
