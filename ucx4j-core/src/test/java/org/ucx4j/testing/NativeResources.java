package org.ucx4j.testing;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

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
     * What the JVM itself has taken from malloc, by Native Memory Tracking ({@code
     * -XX:NativeMemoryTracking=summary}): {@code [bytes, allocations, bytes of the "Other" category]}
     * ("Other" holds {@code Arena} and {@code Unsafe} allocations: the Java side's native memory), or
     * null when tracking is off.
     */
    public static long[] jvmMalloc() {
        String summary;
        try {
            summary = (String) java.lang.management.ManagementFactory.getPlatformMBeanServer()
                    .invoke(
                            new javax.management.ObjectName("com.sun.management:type=DiagnosticCommand"),
                            "vmNativeMemory",
                            new Object[] {new String[] {"summary", "scale=b"}},
                            new String[] {String[].class.getName()});
        } catch (javax.management.JMException e) {
            throw new IllegalStateException(e);
        }
        java.util.regex.Matcher total =
                java.util.regex.Pattern.compile("malloc: (\\d+) #(\\d+)").matcher(summary);
        if (!total.find()) {
            return null; // "Native memory tracking is not enabled"
        }
        java.util.regex.Matcher other = java.util.regex.Pattern.compile("-\\s+Other \\([^\\n]*\\n\\s+\\(malloc=(\\d+)")
                .matcher(summary);
        return new long[] {
            Long.parseLong(total.group(1)),
            Long.parseLong(total.group(2)),
            other.find() ? Long.parseLong(other.group(1)) : 0
        };
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
