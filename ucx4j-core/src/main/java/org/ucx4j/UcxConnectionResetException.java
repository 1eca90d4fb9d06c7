package org.ucx4j;

/**
 * The connection to the peer broke: the peer closed, died, or the link failed. Every operation pending on that endpoint fails with this.
 *
 * <p>Threading: immutable once thrown.
 */
public class UcxConnectionResetException extends UcxException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param call the failed call
     * @param rawStatus the raw {@code ucs_status_t} (usually {@code UCS_ERR_CONNECTION_RESET})
     * @param detail what was being done, or null
     */
    public UcxConnectionResetException(String call, int rawStatus, String detail) {
        super(call, rawStatus, detail);
    }

    /**
     * Creates the exception with the usual status, {@code UCS_ERR_CONNECTION_RESET}.
     *
     * @param call the failed call
     * @param detail what was being done, or null
     */
    public UcxConnectionResetException(String call, String detail) {
        super(call, UcxStatus.CONNECTION_RESET.code(), detail);
    }
}
