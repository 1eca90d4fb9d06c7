package org.ucx4j.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The one place that touches the restricted parts of {@code java.lang.foreign}: library lookup,
 * downcall handles, upcall stubs and reinterpreting raw addresses.
 *
 * <p>Why one place: a JVM started without {@code --enable-native-access} for our module warns (JDK 25)
 * or refuses ({@code --illegal-native-access=deny}) at the first restricted call. Keeping them here means
 * one {@code @SuppressWarnings("restricted")} and one spot to turn that refusal into a clear message.
 *
 * <p>Threading: stateless apart from the linker; safe from any thread.
 */
@SuppressWarnings("restricted")
public final class NativeLinker {
    private static final Linker LINKER = Linker.nativeLinker();

    private NativeLinker() {}

    /**
     * Opens a shared library by absolute path or by soname (the system loader's search), for the life of
     * the JVM.
     *
     * @param nameOrPath a path or a soname such as {@code libucp.so.0}
     * @return the lookup over the library and its dependencies
     * @throws IllegalArgumentException when dlopen fails
     */
    public static SymbolLookup open(String nameOrPath) {
        if (nameOrPath.indexOf('/') >= 0) {
            return SymbolLookup.libraryLookup(Path.of(nameOrPath), Arena.global());
        }
        return SymbolLookup.libraryLookup(nameOrPath, Arena.global());
    }

    /** The C library (libc) symbols. */
    public static SymbolLookup libc() {
        return LINKER.defaultLookup();
    }

    /**
     * A downcall handle for a symbol that must exist.
     *
     * @throws UnsatisfiedLinkError naming the symbol when it is missing
     */
    public static MethodHandle downcall(
            SymbolLookup lookup, String name, FunctionDescriptor fd, Linker.Option... options) {
        MemorySegment symbol = lookup.find(name)
                .orElseThrow(() -> new UnsatisfiedLinkError("symbol not found in UCX library: " + name));
        return LINKER.downcallHandle(symbol, fd, options);
    }

    /**
     * The one descriptor ucx4j links C functions of {@code arity} arguments with: every argument and the
     * result a 64-bit word ({@code long}). A distinct descriptor costs a fresh JVM 5-12 ms of spun classes
     * the first time it is linked; sharing one per arity across libc and UCX keeps that to a few. Why a
     * word carries a pointer, a {@code size_t}, an {@code int} or a one-byte enum alike on the supported
     * platforms (x86-64, aarch64): {@link Ucp}.
     *
     * @param arity how many arguments the function takes
     * @return {@code (long x arity) -> long}
     */
    public static FunctionDescriptor words(int arity) {
        if (arity < 0 || arity >= WORDS.length) {
            throw new IllegalArgumentException(
                    "C functions of 0 to " + (WORDS.length - 1) + " arguments are linked as words, not " + arity);
        }
        return WORDS[arity];
    }

    private static final FunctionDescriptor[] WORDS = new FunctionDescriptor[8];

    static {
        for (int arity = 0; arity < WORDS.length; arity++) {
            java.lang.foreign.MemoryLayout[] args = new java.lang.foreign.MemoryLayout[arity];
            java.util.Arrays.fill(args, java.lang.foreign.ValueLayout.JAVA_LONG);
            WORDS[arity] = FunctionDescriptor.of(java.lang.foreign.ValueLayout.JAVA_LONG, args);
        }
    }

    /**
     * A downcall handle for a symbol that must exist, linked with {@link #words(int)}.
     *
     * @throws UnsatisfiedLinkError naming the symbol when it is missing
     */
    public static MethodHandle downcallWords(SymbolLookup lookup, String name, int arity, Linker.Option... options) {
        return downcall(lookup, name, words(arity), options);
    }

    /** A downcall handle for a symbol that newer library versions have; empty when it is missing. */
    public static Optional<MethodHandle> optionalDowncall(SymbolLookup lookup, String name, FunctionDescriptor fd) {
        return lookup.find(name).map(symbol -> LINKER.downcallHandle(symbol, fd));
    }

    /**
     * Creates an upcall stub that lives as long as the JVM. Callers create one stub per C signature,
     * once, and dispatch through the integer user data they passed to UCX.
     */
    public static MemorySegment upcall(Class<?> owner, String method, MethodType type, FunctionDescriptor fd) {
        try {
            MethodHandle target = MethodHandles.lookup().findStatic(owner, method, type);
            return LINKER.upcallStub(target, fd, Arena.global());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot bind upcall " + owner.getName() + "." + method, e);
        }
    }

    /**
     * Views {@code size} bytes at a raw address that UCX handed us. The result has the global scope:
     * the caller owns knowing how long the memory stays valid.
     */
    public static MemorySegment view(MemorySegment address, long size) {
        return address.reinterpret(size);
    }

    /** Views a NUL-terminated C string of unknown length and decodes it. */
    public static String cString(MemorySegment address) {
        if (address.equals(MemorySegment.NULL)) {
            return null;
        }
        return address.reinterpret(Long.MAX_VALUE).getString(0);
    }

    /**
     * Views {@code size} bytes at a raw address whose lifetime {@code arena} stands for: once the arena
     * is closed the view is unusable (for memory that UCX allocated and frees when its owner closes).
     */
    public static MemorySegment view(MemorySegment address, long size, Arena arena) {
        return address.reinterpret(size, arena, null);
    }

    /**
     * Views {@code size} bytes at a raw address whose lifetime {@code arena} stands for, running
     * {@code cleanup} (with a global-scope view of the same memory) when the arena closes: for memory that
     * the caller hands out and takes back, such as a pooled buffer.
     *
     * @param address the start of the memory
     * @param size how many bytes the view covers
     * @param arena the arena whose close ends the view and runs {@code cleanup}
     * @param cleanup what to do when the arena closes; null for nothing
     * @return the view
     */
    public static MemorySegment view(MemorySegment address, long size, Arena arena, Consumer<MemorySegment> cleanup) {
        return address.reinterpret(size, arena, cleanup);
    }
}
