package org.ucx4j.testing;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.management.JMException;
import javax.management.ObjectName;

/** Open file descriptors and bytes in use by malloc, for leak checks. */
public final class NativeResources {
    private static final MethodHandle MALLINFO2 = Linker.nativeLinker()
            .defaultLookup()
            .find("mallinfo2")
            .map(s -> Linker.nativeLinker()
                    .downcallHandle(
                            s,
                            FunctionDescriptor.of(
                                    MemoryLayout.structLayout(MemoryLayout.sequenceLayout(10, ValueLayout.JAVA_LONG)))))
            .orElse(null);

    private NativeResources() {}

    /** Entries in /proc/self/fd. */
    public static int openFileDescriptors() {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return (int) s.count();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * What the JVM itself has taken from malloc, by Native Memory Tracking.
     *
     * @param bytes the bytes of every block NMT tracks
     * @param blocks how many blocks (each also carries NMT's 16-byte header, which malloc counts)
     * @param otherBytes the bytes of NMT's "Other" category: {@code Arena} and {@code Unsafe} allocations,
     *     the Java side's native memory
     */
    public record JvmMalloc(long bytes, long blocks, long otherBytes) {}

    /**
     * What the JVM itself has taken from malloc now ({@code -XX:NativeMemoryTracking=summary}), or null
     * when tracking is off.
     */
    public static JvmMalloc jvmMalloc() {
        String summary;
        try {
            summary = (String) ManagementFactory.getPlatformMBeanServer()
                    .invoke(
                            new ObjectName("com.sun.management:type=DiagnosticCommand"),
                            "vmNativeMemory",
                            new Object[] {new String[] {"summary", "scale=b"}},
                            new String[] {String[].class.getName()});
        } catch (JMException e) {
            throw new IllegalStateException(e);
        }
        Matcher total = Pattern.compile("malloc: (\\d+) #(\\d+)").matcher(summary);
        if (!total.find()) {
            return null; // "Native memory tracking is not enabled"
        }
        // NMT leaves out categories under 1 KB: no "Other" section reads as 0.
        Matcher other =
                Pattern.compile("-\\s+Other \\([^\\n]*\\n\\s+\\(malloc=(\\d+)").matcher(summary);
        return new JvmMalloc(
                Long.parseLong(total.group(1)),
                Long.parseLong(total.group(2)),
                other.find() ? Long.parseLong(other.group(1)) : 0);
    }

    /** Bytes malloc has handed out and not had back ({@code uordblks + hblkhd} of {@code mallinfo2}). */
    public static long mallocInUse() {
        if (MALLINFO2 == null) {
            return -1;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment info = (MemorySegment) MALLINFO2.invokeExact((java.lang.foreign.SegmentAllocator) arena);
            long hblkhd = info.getAtIndex(ValueLayout.JAVA_LONG, 4);
            long uordblks = info.getAtIndex(ValueLayout.JAVA_LONG, 7);
            return uordblks + hblkhd;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
