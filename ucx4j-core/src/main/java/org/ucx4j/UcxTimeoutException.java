package org.ucx4j;

/**
 * The operation did not finish in time: a connect timeout, a blocking call's timeout, or UCX's keep-alive declaring the peer dead.
 *
 * <p>Threading: immutable once thrown.
 */
public class UcxTimeoutException extends UcxException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param call the failed call
     * @param rawStatus the raw {@code ucs_status_t} (usually {@code UCS_ERR_TIMED_OUT})
     * @param detail what was being done, or null
     */
    public UcxTimeoutException(String call, int rawStatus, String detail) {
        super(call, rawStatus, detail);
    }

    /**
     * Creates the exception with the usual status, {@code UCS_ERR_TIMED_OUT}.
     *
     * @param call the failed call
     * @param detail what was being done, or null
     */
    public UcxTimeoutException(String call, String detail) {
        super(call, UcxStatus.TIMED_OUT.code(), detail);
    }
}
