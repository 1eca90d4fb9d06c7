package org.ucx4j.spark;

import java.io.IOException;
import org.apache.spark.scheduler.MapStatus;
import org.apache.spark.shuffle.ShuffleWriter;
import scala.Option;
import scala.Product2;
import scala.collection.Iterator;

/**
 * Spark's shuffle writer, unchanged, except that a successful {@link #stop} first waits until this
 * executor's block server is registered with the driver: the map output is announced when the task ends,
 * and no reducer may ask for it before its server can be found. The wait is at the end, not the start, so
 * that the server's start (UCX's set-up, the registration's round trip) overlaps the first map task's work.
 *
 * <p>Threading: one per map task, used by that task's thread, as Spark's writers are.
 *
 * @param <K> the key type
 * @param <V> the value type
 */
final class RegisteredOutputWriter<K, V> extends ShuffleWriter<K, V> {
    private final ShuffleWriter<K, V> writer;
    private final Runnable awaitRegistered;

    /**
     * @param writer Spark's writer
     * @param awaitRegistered returns once the server is registered; throws (failing the task) when it
     *     cannot start
     */
    RegisteredOutputWriter(ShuffleWriter<K, V> writer, Runnable awaitRegistered) {
        this.writer = writer;
        this.awaitRegistered = awaitRegistered;
    }

    @Override
    public void write(Iterator<Product2<K, V>> records) throws IOException {
        writer.write(records);
    }

    @Override
    public Option<MapStatus> stop(boolean success) {
        if (success) {
            // A throw here makes Spark call stop(false), which cleans the output up.
            awaitRegistered.run();
        }
        return writer.stop(success);
    }

    @Override
    public long[] getPartitionLengths() {
        return writer.getPartitionLengths();
    }
}
