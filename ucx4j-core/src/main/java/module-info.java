/**
 * ucx4j-core: UCX bindings over the Foreign Function and Memory API. The public API is
 * {@code org.ucx4j}; {@code org.ucx4j.internal} holds the native plumbing and is not exported.
 * Run with {@code --enable-native-access=org.ucx4j.core}.
 */
module org.ucx4j.core {
    requires org.slf4j;
    requires org.snakeyaml.engine.v2;
    exports org.ucx4j;
    exports org.ucx4j.spi;

    uses org.ucx4j.spi.UcxExtension;
}
