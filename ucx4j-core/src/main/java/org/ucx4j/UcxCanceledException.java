package org.ucx4j;

/**
 * The operation was canceled: by {@code cancel}, or because its endpoint or worker closed first.
 *
 * <p>Threading: immutable once thrown.
 */
public class UcxCanceledException extends UcxException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param call the failed call
     * @param rawStatus the raw {@code ucs_status_t} (usually {@code UCS_ERR_CANCELED})
     * @param detail what was being done, or null
     */
    public UcxCanceledException(String call, int rawStatus, String detail) {
        super(call, rawStatus, detail);
    }

    /**
     * Creates the exception with the usual status, {@code UCS_ERR_CANCELED}.
     *
     * @param call the failed call
     * @param detail what was being done, or null
     */
    public UcxCanceledException(String call, String detail) {
        super(call, UcxStatus.CANCELED.code(), detail);
    }
}
