package org.ucx4j.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.ucx4j.cuda.Cuda;
import org.ucx4j.cuda.CudaDevice;
import org.ucx4j.cuda.DeviceMemory;
import org.ucx4j.cuda.GpuMemoryPool;
import org.ucx4j.cuda.PinnedMemory;
import org.ucx4j.cuda.SpillStatistics;
import org.ucx4j.cuda.SpillStore;
import org.ucx4j.cuda.SpillTier;
import org.ucx4j.cuda.SpillableBuffer;

/**
 * {@code ucx4j bench --spill}: a buffer of {@code --size} bytes spilled by a {@link SpillStore} from the device
 * to pinned host memory and brought back, against the same two copies done directly with {@code cuMemcpy}
 * between device memory and pinned host memory, alternating in one run. Bandwidth is both directions' bytes
 * over the round trip's time, in MB/s of 2^20 bytes as everywhere in ucx4j's benchmarks; medians of the rounds.
 */
final class SpillBench {
    /** The target of issue 13: the spill round trip at no less than this fraction of the copies' bandwidth. */
    static final double TARGET_RATIO = 0.8;

    private SpillBench() {}

    static int run(int gpu, long size, long rounds, boolean json, PrintStream out) {
        CudaDevice device = Cuda.device(gpu);
        List<Double> copyMbs = new ArrayList<>();
        List<Double> spillMbs = new ArrayList<>();
        SpillStatistics stats;
        try (GpuMemoryPool pool = GpuMemoryPool.create(device, 2 * size, 2 * size);
                DeviceMemory deviceBuffer = pool.allocate(size);
                PinnedMemory pinned = device.allocatePinned(size);
                SpillStore store = SpillStore.builder(pool)
                        .deviceMemoryLimit(2 * size)
                        // The host limit counts blocks by size class (up to 25% above the size) and the idle
                        // block kept for reuse: room for both, so no round pins anew.
                        .memoryLimit(3 * size)
                        .build();
                SpillableBuffer buffer = store.allocate(size)) {
            // One round of each unmeasured: the store's pinned host block and the copies' first touch.
            copyRoundTrip(deviceBuffer, pinned);
            spillRoundTrip(store, buffer, size);
            for (long i = 0; i < rounds; i++) {
                copyMbs.add(mbPerSecond(2 * size, copyRoundTrip(deviceBuffer, pinned)));
                spillMbs.add(mbPerSecond(2 * size, spillRoundTrip(store, buffer, size)));
            }
            stats = store.statistics();
        }
        double copy = median(copyMbs);
        double spill = median(spillMbs);
        double ratio = spill / copy;
        if (json) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("device", device.toString());
            m.put("size", size);
            m.put("rounds", rounds);
            m.put("cumemcpy_pinned_mb_s", copy);
            m.put("spill_mb_s", spill);
            m.put("ratio", ratio);
            m.put("target_ratio", TARGET_RATIO);
            m.put("meets_target", ratio >= TARGET_RATIO);
            m.put("cumemcpy_rounds_mb_s", copyMbs);
            m.put("spill_rounds_mb_s", spillMbs);
            m.put("device_to_host_mb_s", stats.deviceToHost().bytesPerSecond() / (1 << 20));
            m.put("host_to_device_mb_s", stats.hostToDevice().bytesPerSecond() / (1 << 20));
            out.println(Json.write(m));
        } else {
            out.printf(
                    Locale.ROOT,
                    "spill of %d bytes on %s, %d rounds (medians; MB/s = 2^20 bytes/s)%n",
                    size,
                    device,
                    rounds);
            out.printf(Locale.ROOT, "cuMemcpy pinned, device -> host -> device: %10.1f MB/s%n", copy);
            out.printf(Locale.ROOT, "spill store, device -> host -> device:     %10.1f MB/s%n", spill);
            out.printf(
                    Locale.ROOT,
                    "  (its moves: device -> host %.1f MB/s, host -> device %.1f MB/s)%n",
                    stats.deviceToHost().bytesPerSecond() / (1 << 20),
                    stats.hostToDevice().bytesPerSecond() / (1 << 20));
            out.printf(
                    Locale.ROOT,
                    "ratio spill / cuMemcpy: %.3f (target >= %.2f: %s)%n",
                    ratio,
                    TARGET_RATIO,
                    ratio >= TARGET_RATIO ? "met" : "NOT met");
        }
        return 0;
    }

    private static long copyRoundTrip(DeviceMemory deviceBuffer, PinnedMemory pinned) {
        long start = System.nanoTime();
        Cuda.copy(pinned.segment(), deviceBuffer.segment());
        Cuda.copy(deviceBuffer.segment(), pinned.segment());
        return System.nanoTime() - start;
    }

    private static long spillRoundTrip(SpillStore store, SpillableBuffer buffer, long size) {
        long start = System.nanoTime();
        if (store.spill(size) != size || buffer.tier() != SpillTier.HOST) {
            throw new IllegalStateException("the buffer did not spill to host memory: " + buffer.tier());
        }
        buffer.acquire().close();
        return System.nanoTime() - start;
    }

    private static double mbPerSecond(long bytes, long nanos) {
        return bytes / (double) (1 << 20) / (nanos / 1e9);
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
