package org.ucx4j;

/**
 * The peer cannot be reached: nothing listens at the address, it refused the connection, or there is no route.
 *
 * <p>Threading: immutable once thrown.
 */
public class UcxUnreachableException extends UcxException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param call the failed call
     * @param rawStatus the raw {@code ucs_status_t} (usually {@code UCS_ERR_UNREACHABLE})
     * @param detail what was being done, or null
     */
    public UcxUnreachableException(String call, int rawStatus, String detail) {
        super(call, rawStatus, detail);
    }

    /**
     * Creates the exception with the usual status, {@code UCS_ERR_UNREACHABLE}.
     *
     * @param call the failed call
     * @param detail what was being done, or null
     */
    public UcxUnreachableException(String call, String detail) {
        super(call, UcxStatus.UNREACHABLE.code(), detail);
    }
}
