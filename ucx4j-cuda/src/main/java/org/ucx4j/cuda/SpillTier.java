package org.ucx4j.cuda;

/**
 * Where a {@link SpillableBuffer}'s bytes are: the tiers of a {@link SpillStore}, fastest first.
 *
 * <p>Threading: constants.
 */
public enum SpillTier {
    /** GPU memory, from the store's {@link GpuMemoryPool}: where the buffer is used. */
    DEVICE("device"),
    /** Pinned host memory: the first tier spilled to. */
    HOST("host"),
    /** A file in the store's directory under {@code local-directory}. */
    DISK("disk");

    private final String label;

    SpillTier(String label) {
        this.label = label;
    }

    /**
     * The tier's name in logs and reports.
     *
     * @return {@code device}, {@code host} or {@code disk}
     */
    public String label() {
        return label;
    }
}
