package org.ucx4j.cuda;

/**
 * A CUDA driver or NVML call failed, or CUDA is not available here. Carries the call and the
 * driver's result code and name ({@code CUDA_ERROR_OUT_OF_MEMORY}, ...), or {@code -1} where the
 * failure is ucx4j's own (no driver, a freed buffer, a buffer of another device).
 *
 * <p>Threading: immutable.
 */
public class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The code of a failure that no driver call returned. */
    public static final int NO_CODE = -1;

    private final int code;

    /**
     * A failure with a driver result code.
     *
     * @param message what failed, with the call and the code's name
     * @param code the {@code CUresult} or {@code nvmlReturn_t}, or {@link #NO_CODE}
     */
    public CudaException(String message, int code) {
        super(message);
        this.code = code;
    }

    /**
     * A failure of ucx4j's own (no driver call involved).
     *
     * @param message what failed
     */
    public CudaException(String message) {
        this(message, NO_CODE);
    }

    /**
     * The driver's result code.
     *
     * @return the {@code CUresult}/{@code nvmlReturn_t}, or {@link #NO_CODE}
     */
    public int code() {
        return code;
    }
}
