package org.ucx4j.cuda.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The one place in ucx4j-cuda that touches the restricted parts of {@code java.lang.foreign}: opening the
 * driver libraries, downcall handles and reinterpreting the addresses they return.
 *
 * <p>Threading: stateless apart from the linker; safe from any thread.
 */
@SuppressWarnings("restricted")
public final class CudaLinker {
    private static final Linker LINKER = Linker.nativeLinker();

    private CudaLinker() {}

    /**
     * Opens a library by soname through the system loader, for the life of the JVM.
     *
     * @param soname for example {@code libcuda.so.1}
     * @return its symbols
     * @throws IllegalArgumentException when the loader cannot open it
     */
    public static SymbolLookup open(String soname) {
        return SymbolLookup.libraryLookup(soname, Arena.global());
    }

    /**
     * A downcall handle for a symbol that must exist.
     *
     * @param lookup the library
     * @param name the symbol
     * @param fd its C signature
     * @param options linker options ({@code critical} only for calls that never block nor call back)
     * @return the handle
     * @throws UnsatisfiedLinkError naming the symbol when it is missing
     */
    public static MethodHandle downcall(
            SymbolLookup lookup, String name, FunctionDescriptor fd, Linker.Option... options) {
        MemorySegment symbol =
                lookup.find(name).orElseThrow(() -> new UnsatisfiedLinkError("symbol not found: " + name));
        return LINKER.downcallHandle(symbol, fd, options);
    }

    /**
     * A downcall handle for the first of several names that exists (newer drivers add versioned names).
     *
     * @param lookup the library
     * @param fd the C signature, the same for every name
     * @param names the names, preferred first
     * @return the handle, or empty when none exists
     */
    public static Optional<MethodHandle> firstDowncall(SymbolLookup lookup, FunctionDescriptor fd, String... names) {
        for (String name : names) {
            Optional<MemorySegment> symbol = lookup.find(name);
            if (symbol.isPresent()) {
                return Optional.of(LINKER.downcallHandle(symbol.get(), fd));
            }
        }
        return Optional.empty();
    }

    /**
     * Views {@code size} bytes at an address, valid while {@code arena} is open: closing the arena makes
     * every later access (and every ucx4j call given the segment) fail with "already closed".
     *
     * @param address the raw address
     * @param size its size in bytes
     * @param arena the lifetime the view stands for
     * @return the view
     */
    public static MemorySegment view(long address, long size, Arena arena) {
        return view(address, size, arena, null);
    }

    /**
     * Views {@code size} bytes at an address, valid while {@code arena} is open, and runs {@code cleanup}
     * when the arena closes (for memory handed out and taken back, such as a pool's).
     *
     * @param address the raw address
     * @param size its size in bytes
     * @param arena the lifetime the view stands for
     * @param cleanup what to do when the arena closes; null for nothing
     * @return the view
     */
    public static MemorySegment view(long address, long size, Arena arena, Consumer<MemorySegment> cleanup) {
        return MemorySegment.ofAddress(address).reinterpret(size, arena, cleanup);
    }

    /**
     * Decodes a NUL-terminated C string at an address the driver returned.
     *
     * @param address the address, or NULL
     * @return the string, or null for NULL
     */
    public static String cString(MemorySegment address) {
        if (address.equals(MemorySegment.NULL)) {
            return null;
        }
        return address.reinterpret(4096).getString(0);
    }
}
