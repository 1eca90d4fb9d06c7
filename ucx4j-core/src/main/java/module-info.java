/**
 * ucx4j-core: UCX bindings over the Foreign Function and Memory API. The public API is
 * {@code org.ucx4j}; {@code org.ucx4j.internal} holds the native plumbing and is not exported.
 * Run with {@code --enable-native-access=org.ucx4j.core}.
 *
 * <p>Configuration: modules register their keys as an {@link org.ucx4j.spi.ConfigKeySet} service.
 * YAML support is optional ({@code requires static}): SnakeYAML Engine reads {@code ucx4j.yaml} when it is
 * on the path (on the module path, resolved: the CLI requires it); without it a config file that exists
 * is an error naming the missing library.
 */
module org.ucx4j.core {
    requires org.slf4j;
    requires static org.snakeyaml.engine.v2;

    exports org.ucx4j;
    exports org.ucx4j.spi;

    uses org.ucx4j.spi.UcxExtension;
    uses org.ucx4j.spi.ConfigKeySet;
}
