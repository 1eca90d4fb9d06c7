/**
 * ucx4j-cuda: GPU memory for ucx4j. The CUDA driver API ({@code libcuda.so.1}) and NVML
 * ({@code libnvidia-ml.so.1}) over the Foreign Function and Memory API, with no CUDA toolkit at build
 * time; device and pinned host memory as owned segments; a GPU memory pool. The API is
 * {@code org.ucx4j.cuda}; {@code org.ucx4j.cuda.internal} holds the bindings.
 */
module org.ucx4j.cuda {
    requires transitive org.ucx4j.core;
    requires org.slf4j;
    requires jdk.management;

    exports org.ucx4j.cuda;

    provides org.ucx4j.spi.UcxExtension with
            org.ucx4j.cuda.internal.CudaUcxExtension;
    provides org.ucx4j.spi.ConfigKeySet with
            org.ucx4j.cuda.internal.CudaKeySet;
}
